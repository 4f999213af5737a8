import { existsSync, readFileSync } from 'node:fs';

// One folder up from the sources (src/version.ts), two up from the build (dist/src/version.js).
const packageFile = [new URL('../package.json', import.meta.url), new URL('../../package.json', import.meta.url)].find((file) => existsSync(file));

/** This gateway's own version (package.json), recorded on every task it creates. */
export const GATEWAY_VERSION: string = (
  JSON.parse(readFileSync(packageFile ?? new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
