import { readFileSync } from 'node:fs';

/** This gateway's own version (package.json), recorded on every task it creates. */
export const GATEWAY_VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
