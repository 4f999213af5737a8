// The docs cannot drift: the configuration reference is what the schema generates (every key,
// with a description), and every relative link in README.md and docs/ reaches a file of this
// repository (and a heading of it, when the link names one).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema, ENV_KEYS } from '../src/config/schema.ts';
import { generateConfigurationReference, REFERENCE_FILE } from '../tools/config-reference/main.ts';
import { headingAnchor } from '../tools/config-reference/render.ts';
import { collectSettings } from '../tools/config-reference/settings.ts';
import { ROOT } from './support/harness.ts';

const DOC_FILES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

/** Markdown without fenced code blocks and inline code spans (links there are examples, not links). */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** The anchors a Markdown file offers: its headings as GitHub makes them, and explicit ids. */
function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading] of text.matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const anchor = headingAnchor(heading as string);
    const count = seen.get(anchor) ?? 0;
    anchors.add(count === 0 ? anchor : `${anchor}-${count}`);
    seen.set(anchor, count + 1);
  }
  for (const [, id] of text.matchAll(/<a id="([^"]+)"><\/a>/g)) anchors.add(id as string);
  return anchors;
}

describe('the configuration reference', () => {
  const generated = generateConfigurationReference();

  it('is what npm run docs:config generates from the schema today', () => {
    const committed = readFileSync(REFERENCE_FILE, 'utf8');
    expect(committed === generated.markdown, 'docs/configuration.md is out of date: run npm run docs:config and commit it').toBe(true);
  });

  it('lists every key of the schema and every environment variable, each key with a description', () => {
    const reference = readFileSync(REFERENCE_FILE, 'utf8');
    const paths = collectSettings(configSchema).flatMap((object) => object.settings.map((setting) => setting.path));
    expect(paths.length).toBeGreaterThan(100);
    expect(paths.filter((path) => !reference.includes(`| \`${path}\` |`))).toEqual([]);
    expect(Object.keys(ENV_KEYS).filter((name) => !reference.includes(`\`${name}\``))).toEqual([]);
    expect(generated.undocumented.map((entry) => `${entry.path}: add a JSDoc comment in src/config/schema.ts`)).toEqual([]);
  });

  it('picks up a key as soon as the schema has it, with its type, default and variable', () => {
    const row = readFileSync(REFERENCE_FILE, 'utf8')
      .split('\n')
      .find((line) => line.startsWith('| `shutdownGraceMs` |'));
    expect(row).toContain('integer ≥ 0');
    expect(row).toContain(`\`${JSON.stringify(configSchema.parse({}).shutdownGraceMs)}\``);
    expect(row).toContain('`A2A_SHUTDOWN_GRACE_MS`');
    expect(row).toContain('handing them back');
  });
});

describe('links in README.md and docs/', () => {
  it('point at files of this repository that exist, and at headings those files have', () => {
    const broken: string[] = [];
    for (const file of DOC_FILES) {
      const path = join(ROOT, file);
      for (const [, target] of prose(readFileSync(path, 'utf8')).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        if (target === undefined || /^[a-z]+:/i.test(target)) continue;
        const [filePart = '', anchor] = target.split('#');
        const resolved = filePart === '' ? path : resolve(dirname(path), filePart);
        const inside = relative(ROOT, resolved);
        if (inside.startsWith('..')) {
          broken.push(`${file}: ${target} leaves the repository (link the public A2A specification instead)`);
          continue;
        }
        if (!existsSync(resolved)) {
          broken.push(`${file}: ${target} does not exist`);
          continue;
        }
        if (anchor !== undefined && anchor !== '' && statSync(resolved).isFile() && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor)) {
          broken.push(`${file}: ${target} names no heading of ${inside}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('link the public A2A specification, never a copy outside the repository', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme).toContain('https://a2a-protocol.org/');
    for (const file of DOC_FILES) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      expect(text, file).not.toMatch(/\]\(\.\.\/shared\/|\]\(\/work\/|\(\/home\//);
    }
  });
});
