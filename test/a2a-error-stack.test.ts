// A refusal (an A2AError of any kind but INTERNAL) carries no stack: it is an answer, and a flood
// of refused connections paid for capturing two per request. An internal error keeps its stack,
// which the bindings log.
import { describe, expect, it } from 'vitest';
import { LimitExceededError } from '../src/limits/limit-refusal.ts';
import { A2AError } from '../src/protocol/errors.ts';

const frames = (error: Error): string[] => (error.stack ?? '').split('\n').filter((line) => line.trim().startsWith('at '));

describe('A2AError stacks', () => {
  it('a refusal has no stack frames; an internal error has them; the limit is left as it was', () => {
    const before = Error.stackTraceLimit;
    const refusal = new A2AError('UNAUTHENTICATED', 'no credentials');
    const limited = new LimitExceededError('limits.unauthenticatedPerSecond', 'RESOURCE_EXHAUSTED', 'too many');
    const internal = new A2AError('INTERNAL', 'broken');
    expect(frames(refusal)).toEqual([]);
    expect(frames(limited)).toEqual([]);
    expect(refusal.stack).toContain('no credentials');
    expect(frames(internal).length).toBeGreaterThan(0);
    expect(Error.stackTraceLimit).toBe(before);
    expect(frames(new Error('plain')).length).toBeGreaterThan(0);
  });
});
