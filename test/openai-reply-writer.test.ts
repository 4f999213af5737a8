// The reply writer (adapters/openai/reply-writer.ts): deltas coalesce while a chunk is being
// stored, a restarted call replaces the artifact, and a failed store stops the model call.
import { describe, expect, it } from 'vitest';
import { ReplyWriter } from '../adapters/openai/reply-writer.ts';
import type { ArtifactChunk } from '../adapters/types.ts';

/** An emit whose stores complete only when the test says so. */
function controlledEmit(): { emit: (chunk: ArtifactChunk) => Promise<void>; chunks: ArtifactChunk[]; completeNext: () => void; failNext: (error: Error) => void } {
  const chunks: ArtifactChunk[] = [];
  const pending: { resolve: () => void; reject: (error: Error) => void }[] = [];
  return {
    chunks,
    emit: (chunk) =>
      new Promise<void>((resolve, reject) => {
        chunks.push(chunk);
        pending.push({ resolve, reject });
      }),
    completeNext: () => pending.shift()?.resolve(),
    failNext: (error) => pending.shift()?.reject(error),
  };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));
const texts = (chunks: ArtifactChunk[]): string[] => chunks.map((c) => c.parts.map((p) => p.text ?? '').join(''));

describe('ReplyWriter', () => {
  it('sends the first delta at once and everything that arrives meanwhile as the next chunk', async () => {
    const store = controlledEmit();
    const writer = new ReplyWriter(store.emit, 'reply-1', 'reply', false);
    writer.push('a');
    writer.push('b');
    writer.push('c');
    expect(texts(store.chunks)).toEqual(['a']);
    store.completeNext();
    await tick();
    expect(texts(store.chunks)).toEqual(['a', 'bc']);
    expect(store.chunks.map((c) => c.append)).toEqual([false, true]);
    store.completeNext();
    await tick();
    const finishing = writer.finish({ finishReason: 'stop' });
    await tick();
    store.completeNext();
    await finishing;
    expect(store.chunks.at(-1)).toMatchObject({ append: true, lastChunk: true, metadata: { finishReason: 'stop' } });
    expect(store.chunks.filter((c) => c.lastChunk)).toHaveLength(1);
  });

  it('a restarted call replaces the artifact with its first chunk', async () => {
    const store = controlledEmit();
    const writer = new ReplyWriter(store.emit, 'reply-1', 'reply', false);
    writer.push('partial');
    store.completeNext();
    await tick();
    const restarting = writer.restart();
    await restarting;
    writer.push('whole');
    expect(store.chunks.map((c) => [texts([c])[0], c.append])).toEqual([
      ['partial', false],
      ['whole', false],
    ]);
  });

  it('a new attempt marks its first and last chunks, so neither is ever taken for the lost attempt’s', async () => {
    const store = controlledEmit();
    const writer = new ReplyWriter(store.emit, 'reply-1', 'reply', true, { attempt: 2, replacesEarlierAttempt: true });
    writer.push('w1 ');
    store.completeNext();
    await tick();
    writer.push('w2');
    store.completeNext();
    await tick();
    const finishing = writer.finish({ finishReason: 'stop' });
    await tick();
    store.completeNext();
    await finishing;
    expect(store.chunks.map((c) => [c.append, c.lastChunk === true, c.metadata])).toEqual([
      [false, false, { attempt: 2, replacesEarlierAttempt: true }],
      [true, false, undefined],
      [true, true, { attempt: 2, replacesEarlierAttempt: true, finishReason: 'stop' }],
    ]);
  });

  it('an empty reply writes nothing, unless an earlier attempt left something to replace', async () => {
    const nothing = controlledEmit();
    await new ReplyWriter(nothing.emit, 'reply-1', 'reply', false).finish({});
    expect(nothing.chunks).toEqual([]);

    const stale = controlledEmit();
    const finishing = new ReplyWriter(stale.emit, 'reply-1', 'reply', true).finish({ finishReason: 'tool_calls' });
    await tick();
    stale.completeNext();
    await finishing;
    expect(stale.chunks).toEqual([{ artifactId: 'reply-1', name: 'reply', parts: [{ text: '' }], append: false, lastChunk: true, metadata: { finishReason: 'tool_calls' } }]);
  });

  it('a failed store is reported once, stops further pushes and is rethrown by finish', async () => {
    const store = controlledEmit();
    const writer = new ReplyWriter(store.emit, 'reply-1', 'reply', false);
    const failures: Error[] = [];
    writer.onFailure = (error) => failures.push(error);
    writer.push('a');
    const stale = new Error('a newer lease holds the task');
    store.failNext(stale);
    await tick();
    expect(failures).toEqual([stale]);
    expect(() => writer.push('b')).toThrow(stale);
    await expect(writer.finish({})).rejects.toBe(stale);
  });
});
