// A team's own adapter, written in TypeScript in a folder of its own (outside this repository),
// importing the adapter types and the in-memory test harness from the package: it type-checks,
// passes its own harness test, and serves A2A calls when a gateway loads it by path.
import { execFile } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';

const run = promisify(execFile);
let dir: string;

const ADAPTER = `import type { Adapter, AdapterContext, TurnOutcome } from 'a2a-gateway/adapter';

export function createAdapter(options: { suffix?: string } = {}): Adapter {
  return {
    name: 'shout',
    version: '1.0.0',
    skills: [{ id: 'shout', name: 'Shout', description: 'Upper-cases the message.', tags: ['example'] }],
    async run(ctx: AdapterContext): Promise<TurnOutcome> {
      const text = ctx.input.flatMap((m) => m.parts).map((p) => p.text ?? '').join('');
      ctx.logger.info('shouting', { length: text.length });
      const charged = await ctx.step('count', async () => text.length);
      await ctx.emitArtifact({ artifactId: 'shout', parts: [{ text: text.toUpperCase() + (options.suffix ?? '') }], lastChunk: true });
      return { state: 'completed', message: \`shouted \${charged.status === 'done' ? charged.value : '?'} characters for \${ctx.caller.principal}\` };
    },
  };
}
`;

// The adapter's own unit test, in the harness: a plain script so the test needs no runner of its own.
const HARNESS_CHECK = `import { runTestTurn, TestStepJournal } from 'a2a-gateway/adapter/testing';
import { createAdapter } from './shout-adapter.ts';

const journal = new TestStepJournal();
const { outcome, context } = await runTestTurn(createAdapter({ suffix: '!' }), { input: 'hello', journal });
if (context.chunks[0]?.parts[0]?.text !== 'HELLO!') throw new Error('wrong artifact');
if (outcome.state !== 'completed') throw new Error('not completed');
// A second run of the turn (a worker took it over) replays the journalled step.
const again = await runTestTurn(createAdapter(), { input: 'hello', journal, attempt: 2 });
console.log(JSON.stringify({ outcome, again: again.outcome, logs: context.logs.map((l) => l.message) }));
`;

beforeAll(async () => {
  // The package's exports are the compiled types and harness in dist/: build them when a source
  // changed since the last build (npm ci built them).
  await run(process.execPath, [join(ROOT, 'tools/build/build.mjs'), '--if-stale'], { cwd: ROOT, timeout: 240_000 });
  dir = mkdtempSync(join(tmpdir(), 'a2a-own-adapter-'));
  mkdirSync(join(dir, 'node_modules'));
  // How a team's project would depend on the gateway (a workspace link or an installed copy).
  symlinkSync(ROOT, join(dir, 'node_modules', 'a2a-gateway'), 'dir');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'my-shout-agent', type: 'module', private: true }));
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, allowImportingTsExtensions: true, skipLibCheck: true, types: [] },
      include: ['*.ts'],
    }),
  );
  writeFileSync(join(dir, 'shout-adapter.ts'), ADAPTER);
  writeFileSync(join(dir, 'shout.check.ts'), HARNESS_CHECK);
}, 300_000);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('an adapter of your own, in TypeScript, outside the repository', () => {
  it('type-checks against the types the package exports', async () => {
    await run(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], { cwd: dir });
  }, 60_000);

  it('passes its own test in the in-memory harness, including a replayed step', async () => {
    const { stdout } = await run(process.execPath, ['--import', join(ROOT, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs'), 'shout.check.ts'], { cwd: dir });
    const result = JSON.parse(stdout) as { outcome: { message: string }; again: { message: string }; logs: string[] };
    expect(result.outcome.message).toBe('shouted 5 characters for user:test:tester');
    expect(result.again.message).toBe('shouted 5 characters for user:test:tester');
    expect(result.logs).toEqual(['shouting']);
  }, 60_000);

  describe('served by a gateway that loads it by path', () => {
    let gw: TestGateway;
    beforeAll(async () => {
      gw = await startTestGateway({ name: 'own-adapter', config: { adapter: join(dir, 'shout-adapter.ts'), adapterOptions: { suffix: '?' } } });
    });
    afterAll(async () => {
      await gw?.close();
    });

    it('answers a message, and its context carries the caller', async () => {
      const reply = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('hi there') });
      const task = (reply.body.result as { task: { status: { state: string; message: { parts: { text: string }[] } }; artifacts: { parts: { text: string }[] }[] } }).task;
      expect(task.status.state).toBe('TASK_STATE_COMPLETED');
      expect(task.artifacts[0]?.parts[0]?.text).toBe('HI THERE?');
      expect(task.status.message.parts[0]?.text).toBe('shouted 8 characters for anonymous');
    });
  });
});
