// Unit tests of the demo adapter's own logic and of the adapter module loader. The adapter
// context is an in-memory fake here on purpose: these tests pin down what the adapter emits and
// returns, not how the runtime stores it (the runtime suites cover that against Redis).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonObject, Message, Part } from '../src/protocol/types.ts';
import { createDemoAdapter } from '../adapters/demo/index.ts';
import { loadAdapter } from '../adapters/module-loader.ts';
import { TestTurnContext } from '../adapters/testing/index.ts';

let messageCounter = 0;

function userMessage(parts: Part[] | string, metadata?: JsonObject): Message {
  messageCounter += 1;
  return {
    messageId: `m-${messageCounter}`,
    role: 'ROLE_USER',
    parts: typeof parts === 'string' ? [{ text: parts }] : parts,
    ...(metadata ? { metadata } : {}),
  };
}

function agentMessage(text: string): Message {
  messageCounter += 1;
  return { messageId: `m-${messageCounter}`, role: 'ROLE_AGENT', parts: [{ text }] };
}

/** The adapter-testing harness, with the demo tests' way of canceling and watching steps. */
function fakeContext(opts: {
  input: Message[];
  history?: Message[];
  turn?: number;
  requestedSkill?: string;
  signal?: AbortSignal;
  onStep?: (count: number) => void;
}): TestTurnContext {
  const ctx = new TestTurnContext({ ...opts, taskId: 't-1', contextId: 'c-1', adapterName: 'demo' });
  const onStep = opts.onStep;
  if (onStep !== undefined) {
    const record = ctx.recordStep.bind(ctx);
    ctx.recordStep = async (name) => {
      await record(name);
      onStep(ctx.recordedSteps.length);
    };
  }
  return ctx;
}

describe('demo adapter', () => {
  it('publishes its skills with name, description, tags and modes', () => {
    const adapter = createDemoAdapter();
    expect(adapter.name).toBe('demo');
    expect(adapter.version).toBe('1.0.0');
    expect(adapter.skills.map((s) => s.id)).toEqual(['echo', 'stream', 'dialogue', 'long', 'fanout', 'review']);
    expect(adapter.extendedSkills?.map((s) => s.id)).toEqual(['transfer']);
    for (const skill of [...adapter.skills, ...(adapter.extendedSkills ?? [])]) {
      expect(skill.name).not.toBe('');
      expect(skill.description).not.toBe('');
      expect(skill.tags.length).toBeGreaterThan(0);
      expect(skill.examples?.length ?? 0).toBeGreaterThan(0);
      expect(skill.inputModes).toContain('text/plain');
      expect(skill.outputModes).toContain('text/plain');
    }
  });

  it('echo returns the input text and data parts in one artifact and completes', async () => {
    const adapter = createDemoAdapter({ stepMs: 1000 });
    const ctx = fakeContext({
      input: [userMessage([{ text: 'hello ' }, { data: { answer: 42, list: [1, 'two'] } }, { text: 'world' }])],
    });
    const started = Date.now();
    const outcome = await adapter.run(ctx);
    // The echo path is the benchmark path: it must not wait for stepMs.
    expect(Date.now() - started).toBeLessThan(500);
    expect(outcome).toEqual({ state: 'completed', message: 'echo complete' });
    expect(ctx.chunks).toHaveLength(1);
    expect(ctx.chunks[0]).toMatchObject({ artifactId: 'echo', name: 'echo' });
    expect(ctx.chunks[0]?.parts).toEqual([
      { text: 'hello ' },
      { data: { answer: 42, list: [1, 'two'] } },
      { text: 'world' },
    ]);
  });

  it('an unknown first word falls back to echo, and an unknown requested skill is rejected', async () => {
    const adapter = createDemoAdapter({ stepMs: 1 });
    const fallback = fakeContext({ input: [userMessage('summarize this')] });
    expect((await adapter.run(fallback)).state).toBe('completed');
    expect(fallback.chunks[0]?.artifactId).toBe('echo');

    const unknown = fakeContext({ input: [userMessage('hi')], requestedSkill: 'translate' });
    const outcome = await adapter.run(unknown);
    expect(outcome.state).toBe('rejected');
    expect(outcome.message).toContain('translate');
    expect(unknown.chunks).toHaveLength(0);
  });

  it('stream emits one chunk per word, in order, with append and lastChunk flags', async () => {
    const adapter = createDemoAdapter({ stepMs: 1 });
    const ctx = fakeContext({ input: [userMessage('stream alpha beta gamma delta')] });
    const outcome = await adapter.run(ctx);
    expect(outcome.state).toBe('completed');
    const chunks = ctx.chunks;
    expect(chunks.map((c) => c.artifactId)).toEqual(['stream', 'stream', 'stream', 'stream']);
    expect(chunks.map((c) => c.parts.map((p) => p.text).join('').trim())).toEqual(['alpha', 'beta', 'gamma', 'delta']);
    expect(chunks.map((c) => c.append)).toEqual([false, true, true, true]);
    expect(chunks.map((c) => c.lastChunk)).toEqual([false, false, false, true]);
    // Concatenating the appended parts gives back the original sentence.
    expect(chunks.flatMap((c) => c.parts).map((p) => p.text).join('')).toBe('alpha beta gamma delta');
  });

  it('stream selected by metadata streams the pangram when given no text', async () => {
    const adapter = createDemoAdapter({ stepMs: 0 });
    const ctx = fakeContext({ input: [userMessage('')], requestedSkill: 'stream' });
    await adapter.run(ctx);
    expect(ctx.chunks).toHaveLength(9);
    expect(ctx.chunks.at(-1)?.lastChunk).toBe(true);
  });

  it('stream stops between chunks when the signal fires', async () => {
    const adapter = createDemoAdapter({ stepMs: 10_000 });
    const controller = new AbortController();
    const ctx = fakeContext({ input: [userMessage('stream one two three')], signal: controller.signal });
    const run = adapter.run(ctx);
    setTimeout(() => controller.abort(), 20);
    await expect(run).rejects.toMatchObject({ name: 'AbortError' });
    expect(ctx.chunks).toHaveLength(1);
  });

  it('dialogue asks for a name, then greets the answer in the next turn', async () => {
    const adapter = createDemoAdapter({ stepMs: 1 });
    const start = userMessage('dialogue');
    const first = fakeContext({ input: [start] });
    const asked = await adapter.run(first);
    expect(asked).toEqual({ state: 'input-required', message: 'What is your name?' });
    expect(first.chunks).toHaveLength(0);

    // The runtime records the input-required message into history as an agent message.
    const second = fakeContext({
      turn: 2,
      input: [userMessage('Ada')],
      history: [start, agentMessage('What is your name?')],
    });
    const greeted = await adapter.run(second);
    expect(greeted.state).toBe('completed');
    expect(second.chunks).toEqual([
      { artifactId: 'greeting', name: 'greeting', parts: [{ text: 'Hello, Ada!' }], lastChunk: true },
    ]);
  });

  it('dialogue recognizes the answer from the starting user message alone', async () => {
    const adapter = createDemoAdapter({ stepMs: 1 });
    const ctx = fakeContext({
      turn: 2,
      input: [userMessage('Grace')],
      history: [userMessage('hi', { skill: 'dialogue' })],
      requestedSkill: 'dialogue',
    });
    await adapter.run(ctx);
    expect(ctx.chunks[0]?.parts).toEqual([{ text: 'Hello, Grace!' }]);
  });

  it('an answer that is not to the dialogue question is not mistaken for one', async () => {
    const adapter = createDemoAdapter({ stepMs: 1 });
    const ctx = fakeContext({
      turn: 2,
      input: [userMessage('Ada')],
      history: [userMessage('long 1'), agentMessage('Need approval')],
    });
    await adapter.run(ctx);
    expect(ctx.chunks[0]?.artifactId).toBe('echo');
  });

  it('long records steps, reports progress and ends with a report artifact', async () => {
    const adapter = createDemoAdapter({ stepMs: 1 });
    const ctx = fakeContext({ input: [userMessage('long 3')] });
    const outcome = await adapter.run(ctx);
    expect(outcome.state).toBe('completed');
    expect(ctx.recordedSteps).toEqual(['step-1', 'step-2', 'step-3']);
    expect(ctx.statuses).toEqual([
      { text: 'progress 1/3', metadata: { progress: 1, total: 3 } },
      { text: 'progress 2/3', metadata: { progress: 2, total: 3 } },
      { text: 'progress 3/3', metadata: { progress: 3, total: 3 } },
    ]);
    expect(ctx.chunks).toHaveLength(1);
    expect(ctx.chunks[0]?.artifactId).toBe('report');
    expect(ctx.chunks[0]?.parts[0]?.text).toContain('3 steps');
  });

  it('long caps the step count at 1000 and defaults to 10', async () => {
    const adapter = createDemoAdapter({ stepMs: 0 });
    const capped = fakeContext({ input: [userMessage('long 5000')] });
    await adapter.run(capped);
    expect(capped.recordedSteps).toHaveLength(1000);
    const defaulted = fakeContext({ input: [userMessage('long')] });
    await adapter.run(defaulted);
    expect(defaulted.recordedSteps).toHaveLength(10);
  });

  it('long rejects with AbortError promptly when canceled mid-step', async () => {
    const stepMs = 300;
    const adapter = createDemoAdapter({ stepMs });
    const controller = new AbortController();
    let abortedAt = 0;
    const ctx = fakeContext({
      input: [userMessage('long 1000')],
      signal: controller.signal,
      // Cancel shortly into the wait that follows step 2, so the adapter is asleep when it fires.
      onStep: (count) => {
        if (count === 2) {
          setTimeout(() => {
            abortedAt = Date.now();
            controller.abort();
          }, 20);
        }
      },
    });
    const error: unknown = await adapter.run(ctx).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DOMException);
    expect((error as DOMException).name).toBe('AbortError');
    // Promptly: well before the step's wait would have ended on its own.
    expect(Date.now() - abortedAt).toBeLessThan(stepMs / 2);
    expect(ctx.recordedSteps).toEqual(['step-1', 'step-2']);
    expect(ctx.statuses).toHaveLength(2);
    // Nothing more happens after the rejection either.
    await new Promise((resolve) => setTimeout(resolve, stepMs + 50));
    expect(ctx.recordedSteps).toHaveLength(2);
    expect(ctx.chunks).toHaveLength(0);
  });

  it('long fails fast when the signal has already fired', async () => {
    const adapter = createDemoAdapter({ stepMs: 10_000 });
    const ctx = fakeContext({ input: [userMessage('long 2')], signal: AbortSignal.abort() });
    await expect(adapter.run(ctx)).rejects.toMatchObject({ name: 'AbortError' });
    expect(ctx.recordedSteps).toHaveLength(0);
  });
});

describe('loadAdapter', () => {
  let dir = '';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'a2a-adapter-test-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('loads the built-in demo adapter with stepMs from the options', async () => {
    const adapter = await loadAdapter('demo', { stepMs: 0 }, dir);
    expect(adapter.name).toBe('demo');
    const ctx = fakeContext({ input: [userMessage('stream a b')] });
    await adapter.run(ctx);
    expect(ctx.chunks).toHaveLength(2);
  });

  it('rejects a non-numeric stepMs for the demo adapter', async () => {
    await expect(loadAdapter('demo', { stepMs: 'fast' }, dir)).rejects.toThrow(/stepMs/);
  });

  it('loads a module exporting createAdapter, resolved against baseDir, and passes options', async () => {
    await writeFile(
      join(dir, 'custom.mjs'),
      [
        'export function createAdapter(options) {',
        '  return {',
        "    name: 'custom', version: '2.0.0', skills: [],",
        "    async run() { return { state: 'completed', message: String(options.greeting) }; },",
        '  };',
        '}',
      ].join('\n'),
    );
    const adapter = await loadAdapter('./custom.mjs', { greeting: 'hi' }, dir);
    expect(adapter.name).toBe('custom');
    expect(adapter.version).toBe('2.0.0');
    expect(await adapter.run(fakeContext({ input: [userMessage('x')] }))).toEqual({ state: 'completed', message: 'hi' });
  });

  it('accepts a default export that is an adapter object, by absolute path', async () => {
    const file = join(dir, 'default-object.mjs');
    await writeFile(
      file,
      "export default { name: 'obj', version: '0.1.0', skills: [], async run() { return { state: 'completed' }; } };\n",
    );
    const adapter = await loadAdapter(file, {}, '/nonexistent');
    expect(adapter.name).toBe('obj');
  });

  it('rejects a module with no usable export, naming the module and what to export', async () => {
    const file = join(dir, 'useless.mjs');
    await writeFile(file, 'export const something = 1;\n');
    const error: unknown = await loadAdapter(file, {}, dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toContain(file);
    expect(message).toContain('no createAdapter export');
    expect(message).toContain('something');
    expect(message).toContain('Export `createAdapter(options, environment)`');
  });

  it('rejects a factory whose result lacks required members, listing them', async () => {
    const file = join(dir, 'incomplete.mjs');
    await writeFile(file, "export const createAdapter = () => ({ name: 'x', skills: {} });\n");
    await expect(loadAdapter(file, {}, dir)).rejects.toThrow(/version \(non-empty string\), skills \(array\), run \(function\)/);
  });

  it('loads the example adapter shipped in examples/', async () => {
    const adapter = await loadAdapter('examples/echo-adapter.mjs', {}, fileURLToPath(new URL('..', import.meta.url)));
    const ctx = fakeContext({ input: [userMessage('shout this')] });
    expect((await adapter.run(ctx)).state).toBe('completed');
    expect(ctx.chunks[0]?.parts).toEqual([{ text: 'SHOUT THIS' }]);
  });

  it('reports a missing module file with its resolved path', async () => {
    await expect(loadAdapter('./missing.mjs', {}, dir)).rejects.toThrow(join(dir, 'missing.mjs'));
  });
});

describe('demo fanout planning', () => {
  it('splits the text into exactly n parts, in order, as even as the words allow', async () => {
    const { planFanout } = await import('../adapters/demo/fanout.ts');
    expect(planFanout('4 the quick brown fox jumps over the lazy dog', undefined).assignments.map((a) => a.input)).toEqual([
      'stream the quick',
      'stream brown fox',
      'stream jumps over',
      'stream the lazy dog',
    ]);
    // Fewer words than parts: one word each.
    expect(planFanout('5 a b', undefined).assignments.map((a) => a.input)).toEqual(['stream a', 'stream b']);
    expect(planFanout('x y z', undefined).assignments).toHaveLength(3);
  });
});
