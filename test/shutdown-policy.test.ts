// A stopping process closes what it runs in order and exits 0; one whose close hangs exits 1
// once shutdownGraceMs plus the margin have passed, never earlier (a long grace is honoured).
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Logger } from '../src/logging/logger.ts';
import { gracefulStop, SHUTDOWN_MARGIN_MS } from '../src/runtime/shutdown-policy.ts';

const logger: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('a graceful stop', () => {
  it('closes in order, says not-ready first, exits 0 once all closed, and only once', async () => {
    const events: string[] = [];
    const exits: number[] = [];
    const stop = gracefulStop({
      shutdownGraceMs: 10_000,
      onStopping: () => events.push('not ready'),
      closers: [
        { name: 'gateway', close: async () => void events.push('gateway') },
        { name: 'worker', close: async () => void events.push('worker') },
      ],
      logger,
      exit: (code) => exits.push(code),
    });
    await stop('SIGTERM');
    await stop('SIGINT');
    expect(events).toEqual(['not ready', 'gateway', 'worker']);
    expect(exits).toEqual([0]);
    vi.advanceTimersByTime(10_000 + SHUTDOWN_MARGIN_MS + 1);
    expect(exits).toEqual([0]);
  });

  it('waits out a grace longer than the old fixed 30 s, then exits 1 if a close still hangs', async () => {
    const exits: number[] = [];
    const shutdownGraceMs = 60_000;
    void gracefulStop({ shutdownGraceMs, closers: [{ name: 'worker', close: () => new Promise<void>(() => undefined) }], logger, exit: (code) => exits.push(code) })('SIGTERM');
    vi.advanceTimersByTime(shutdownGraceMs + SHUTDOWN_MARGIN_MS - 1);
    expect(exits).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(exits).toEqual([1]);
  });

  it('goes on closing the rest when one close fails', async () => {
    const closed: string[] = [];
    const exits: number[] = [];
    await gracefulStop({
      shutdownGraceMs: 0,
      closers: [
        { name: 'gateway', close: async () => Promise.reject(new Error('boom')) },
        { name: 'worker', close: async () => void closed.push('worker') },
      ],
      logger,
      exit: (code) => exits.push(code),
    })('SIGTERM');
    expect(closed).toEqual(['worker']);
    expect(exits).toEqual([0]);
  });
});
