#!/usr/bin/env node
// Entry point for `a2a-gateway` (npx a2a-gateway, or after npm link): runs the TypeScript CLI through tsx.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
