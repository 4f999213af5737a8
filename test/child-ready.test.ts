// The readiness wait of the processes tests spawn: a child that never gets ready is killed at its
// deadline, and one that got ready is never killed by that deadline later. (A worker process was
// once SIGKILLed 30 s after it started, mid-turn, so a long test lost its workers one by one and
// waited for a stall timeout.) Only setTimeout is faked: the children and their output are real.
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { printed, whenChildReady } from './support/child-ready.ts';
import { deletePrefix, isRunning, openTestRedis, spawnWorkerProcess, uniquePrefix } from './support/harness.ts';

const spawned: ChildProcess[] = [];

function node(script: string): { child: ChildProcess; exited: Promise<string> } {
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  spawned.push(child);
  return { child, exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal ?? String(code)))) };
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
});

afterEach(() => {
  vi.useRealTimers();
  for (const child of spawned.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

describe('waiting for a spawned process to be ready', () => {
  it('leaves a child that got ready running long past its readiness deadline', async () => {
    const { child } = node("console.log('up'); setInterval(() => {}, 1000)");
    const { value } = await whenChildReady(child, { name: 'child', ready: printed('up'), timeoutMs: 1_000 });
    expect(value).toBe(true);
    vi.advanceTimersByTime(60_000);
    expect(child.killed).toBe(false);
    expect(child.exitCode ?? child.signalCode).toBeNull();
  });

  it('kills a child that is not ready by its deadline, and says what it printed', async () => {
    const { child, exited } = node("console.log('still starting'); setInterval(() => {}, 1000)");
    const waiting = whenChildReady(child, { name: 'slow child', ready: printed('up'), timeoutMs: 1_000 });
    await new Promise<void>((resolve) => child.stdout?.once('data', () => resolve()));
    vi.advanceTimersByTime(1_000);
    await expect(waiting).rejects.toThrow(/slow child not ready after 1000 ms:\nstill starting/);
    expect(await exited).toBe('SIGKILL');
  });

  it('rejects at once when the child exits before it is ready', async () => {
    const { child } = node('process.exit(3)');
    await expect(whenChildReady(child, { name: 'short child', ready: printed('up') })).rejects.toThrow(/short child exited \(3\) before it was ready/);
  });

  it('yields what readiness found in the output (a URL a child printed)', async () => {
    const { child } = node("console.log('listening on http://127.0.0.1:4321/ now'); setInterval(() => {}, 1000)");
    const { value, output } = await whenChildReady(child, { name: 'child', ready: (out) => /on (http:\S+)/.exec(out)?.[1] });
    expect(value).toBe('http://127.0.0.1:4321/');
    expect(output()).toContain('listening on');
  });

  it('a spawned worker process keeps running past the 30 s readiness window of its start', async () => {
    const prefix = uniquePrefix('child-ready');
    const worker = await spawnWorkerProcess(prefix);
    spawned.push(worker.child);
    vi.advanceTimersByTime(120_000);
    expect(worker.child.killed).toBe(false);
    expect(isRunning(worker)).toBe(true);
    worker.kill('SIGKILL');
    await worker.exited;
    vi.useRealTimers();
    const redis = openTestRedis();
    await deletePrefix(redis, prefix);
    await redis.quit();
  });
});
