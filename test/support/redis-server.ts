// A redis-server process of a test's (or the abuse run's) own, on a free loopback port, for
// faults the shared Redis must never see: SIGSTOP (a hung Redis), SIGKILL. Only this process is
// ever signalled, by its pid.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { printed, whenChildReady } from './child-ready.ts';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface OwnRedis {
  url: string;
  pid: number;
  /** SIGSTOP: the process keeps its connections open and answers nothing. */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  stop(): Promise<void>;
}

/** `args` are appended to the defaults (later options win), e.g. ['--appendonly', 'yes']. */
export async function startOwnRedis(options: { args?: string[] } = {}): Promise<OwnRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'a2a-own-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...(options.args ?? [])];
  const child: ChildProcess = spawn('redis-server', args, {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await whenRedisReady(child, 'redis-server');
  const pid = child.pid as number;
  return {
    url: `redis://127.0.0.1:${port}`,
    pid,
    pause: () => process.kill(pid, 'SIGSTOP'),
    resume: () => process.kill(pid, 'SIGCONT'),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        process.kill(pid, 'SIGCONT');
        child.kill('SIGKILL');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Resolves once a spawned redis-server says it accepts connections; rejects (and kills it) if it exits first or takes 15 s. */
export async function whenRedisReady(child: ChildProcess, name: string): Promise<void> {
  await whenChildReady(child, { name, ready: printed('Ready to accept connections'), timeoutMs: 15_000 });
}
