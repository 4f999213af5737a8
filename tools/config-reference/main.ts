// npm run docs:config: writes docs/configuration.md from the schema. `--check` only says whether
// the committed file is what the schema gives (exit 1 if not), for CI and the docs test.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { configSchema, ENV_KEYS } from '../../src/config/schema.ts';
import { readSchemaDocs } from './jsdoc.ts';
import { renderConfigurationReference } from './render.ts';

export const SCHEMA_FILE = fileURLToPath(new URL('../../src/config/schema.ts', import.meta.url));
/** The folder of the schema's sections (auth, limits, push…), one file each. */
const SCHEMA_SECTIONS_DIR = fileURLToPath(new URL('../../src/config/schema/', import.meta.url));

/** schema.ts and its section files, in a stable order. */
export function schemaFiles(): string[] {
  const sections = readdirSync(SCHEMA_SECTIONS_DIR)
    .filter((name) => name.endsWith('.ts'))
    .sort()
    .map((name) => `${SCHEMA_SECTIONS_DIR}${name}`);
  return [SCHEMA_FILE, ...sections];
}
export const REFERENCE_FILE = fileURLToPath(new URL('../../docs/configuration.md', import.meta.url));

export function generateConfigurationReference(): ReturnType<typeof renderConfigurationReference> {
  return renderConfigurationReference({ schema: configSchema, envKeys: ENV_KEYS, docs: readSchemaDocs(schemaFiles()) });
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { markdown, undocumented } = generateConfigurationReference();
  for (const { path } of undocumented) process.stderr.write(`docs:config: ${path} has no description: add a JSDoc comment to it in src/config/schema.ts or its section in src/config/schema/\n`);
  if (process.argv.includes('--check')) {
    let committed = '';
    try {
      committed = readFileSync(REFERENCE_FILE, 'utf8');
    } catch {
      // missing: reported as out of date below
    }
    if (committed !== markdown) {
      process.stderr.write('docs/configuration.md is out of date with src/config/schema.ts: run npm run docs:config and commit the result\n');
      process.exit(1);
    }
  } else {
    writeFileSync(REFERENCE_FILE, markdown);
    process.stdout.write(`wrote docs/configuration.md\n`);
  }
  if (undocumented.length > 0) process.exit(1);
}
