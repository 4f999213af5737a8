// The delivery-guarantees extension: the card states each guarantee with this deployment's
// figures, and no statement goes out without a test behind it — every statement id is named
// `[guarantee:<id>]` in the title of a test of this suite that proves it.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configSchema } from '../src/config/schema.ts';
import { DELIVERY_GUARANTEES_URI, guaranteeStatements } from '../src/extensions/delivery-guarantees.ts';
import { startTestGateway, type TestGateway } from './support/harness.ts';

interface Statement {
  id: string;
  holds: string;
  bounds: Record<string, number>;
}

interface Card {
  capabilities: { extensions?: { uri: string; params?: { statements?: Statement[] } }[] };
}

async function statementsOn(gw: TestGateway): Promise<Statement[]> {
  const card = (await (await fetch(`${gw.url}/.well-known/agent-card.json`)).json()) as Card;
  const extension = card.capabilities.extensions?.find((declared) => declared.uri === DELIVERY_GUARANTEES_URI);
  expect(extension, 'the card declares the delivery-guarantees extension').toBeDefined();
  return extension?.params?.statements ?? [];
}

describe('the card states the delivery guarantees with this deployment\'s figures', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway({
      name: 'guarantees',
      config: { maxTurnAttempts: 5, replay: { maxEvents: 321, maxAgeSeconds: 600, maxBytes: 1_000_000, pushHoldMaxEvents: 10, pushHoldMaxBytes: 1_000 } },
    });
  });

  afterAll(async () => {
    await gw?.close();
  });

  it('names every guarantee once, with the configured bounds', async () => {
    const statements = await statementsOn(gw);
    expect(statements.map((statement) => statement.id)).toEqual(['task.durable', 'send.idempotent', 'stream.replay', 'turn.steps-once', 'push.at-least-once']);
    const byId = new Map(statements.map((statement) => [statement.id, statement]));
    expect(byId.get('task.durable')?.bounds.maxTurnAttempts).toBe(5);
    expect(byId.get('stream.replay')?.bounds).toEqual({ maxEvents: 321, maxAgeSeconds: 600, maxBytes: 1_000_000 });
    for (const statement of statements) expect(statement.holds.length).toBeGreaterThan(40);
  });

  it('states no push guarantee where push is off', async () => {
    const without = await startTestGateway({ name: 'guarantees-nopush', config: { push: { enabled: false } } });
    try {
      expect((await statementsOn(without)).map((statement) => statement.id)).not.toContain('push.at-least-once');
    } finally {
      await without.close();
    }
  });
});

describe('every statement is backed by a test that names it', () => {
  it('each statement id appears as [guarantee:<id>] in a test title of this suite', async () => {
    const testDir = import.meta.dirname;
    const files = (await readdir(testDir)).filter((file) => file.endsWith('.test.ts') && file !== 'delivery-guarantees.test.ts');
    const named = new Map<string, string[]>();
    for (const file of files) {
      const source = await readFile(join(testDir, file), 'utf8');
      // Only titles of tests that run: it(, it.each(...)( and test(, not it.skip / it.todo.
      for (const match of source.matchAll(/\b(?:it|test)(?:\.each\([^)]*\))?\(\s*[`'"]([^`'"]*\[guarantee:([a-z.-]+)\][^`'"]*)[`'"]/g)) {
        const id = match[2] as string;
        named.set(id, [...(named.get(id) ?? []), file]);
      }
    }
    const statements = guaranteeStatements(configSchema.parse({}));
    for (const statement of statements) {
      expect(named.get(statement.id), `no test names [guarantee:${statement.id}]`).toBeDefined();
    }
    // And no test claims a guarantee the card does not state.
    expect([...named.keys()].filter((id) => !statements.some((statement) => statement.id === id))).toEqual([]);
  });
});
