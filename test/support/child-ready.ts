// Waiting for a spawned child process (a worker, a gateway, a redis-server) to say it is up.
// A child that never does is killed: its caller never gets a handle to stop it. One that did is
// left alone for good: its readiness deadline is cleared, so a long test's worker is not killed
// from under it half a minute after it started.
import type { ChildProcess } from 'node:child_process';

export interface ReadyWait<T> {
  /** Names the child in errors, e.g. "worker process". */
  name: string;
  /** What the child's readiness yields, read from everything it printed so far; undefined while not ready. */
  ready: (output: string) => T | undefined;
  timeoutMs?: number;
}

export interface ReadyChild<T> {
  value: T;
  /** Everything the child printed so far, stdout and stderr (both are drained, so a chatty child never blocks on a full pipe). */
  output: () => string;
}

/** A readiness test: the child printed `marker`. */
export const printed =
  (marker: string) =>
  (output: string): true | undefined =>
    output.includes(marker) ? true : undefined;

export function whenChildReady<T>(child: ChildProcess, { name, ready, timeoutMs = 30_000 }: ReadyWait<T>): Promise<ReadyChild<T>> {
  let out = '';
  const output = (): string => out;
  return new Promise<ReadyChild<T>>((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      outcome();
    };
    const timer = setTimeout(() => {
      settle(() => {
        child.kill('SIGKILL');
        reject(new Error(`${name} not ready after ${timeoutMs} ms:\n${out}`));
      });
    }, timeoutMs);
    const onData = (chunk: Buffer): void => {
      out += chunk.toString();
      if (settled) return;
      const value = ready(out);
      if (value !== undefined) settle(() => resolve({ value, output }));
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code, signal) => settle(() => reject(new Error(`${name} exited (${signal ?? String(code)}) before it was ready:\n${out}`))));
  });
}
