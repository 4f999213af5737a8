// The chaos run's own redis-server: started on a free loopback port with AOF fsync'ed on every
// write, crashed with SIGKILL and started again on the same port and directory. With
// `appendfsync always` a write is on disk before its reply leaves Redis, so SIGKILL is a fair
// crash: whatever a client was told is stored must come back after the restart.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  readonly dir: string;
  /** How many times crash() + start() brought it back. */
  readonly restarts: number;
  /** SIGKILLs the server and waits until the process is gone. */
  crash(): Promise<void>;
  /** Starts it again (same port, same data directory) and waits until it answers PING. */
  start(): Promise<void>;
  /** Stops it for good (SIGTERM, then SIGKILL); safe to call twice. */
  stop(): Promise<void>;
}

/** A port the kernel just handed out on 127.0.0.1 (a small race with other programs is accepted). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no free port'))));
    });
  });
}

async function answersPing(port: number): Promise<boolean> {
  const probe = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 500 });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    // PING is answered while the AOF is still loading; a real command is refused with LOADING
    // until it is done, so ask for one that reads the keyspace.
    await probe.dbsize();
    return true;
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

function waitExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

export async function startRedisServer(dir: string, binary = 'redis-server'): Promise<RedisServer> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  let restarts = 0;
  let started = false;
  // If the runner dies (Ctrl-C, crash), the server we started must not outlive it.
  const onExit = (): void => {
    child?.kill('SIGKILL');
  };
  process.once('exit', onExit);

  const launch = async (): Promise<void> => {
    const args = [
      '--port', String(port),
      '--bind', '127.0.0.1',
      '--appendonly', 'yes',
      '--appendfsync', 'always',
      '--dir', dir,
      '--save', '',
      '--daemonize', 'no',
      '--logfile', join(dir, 'redis.log'),
    ];
    const spawned = spawn(binary, args, { stdio: 'ignore' });
    child = spawned;
    let exited = false;
    spawned.once('exit', () => {
      exited = true;
    });
    spawned.once('error', () => {
      exited = true;
    });
    // Bounded: loading a small AOF takes milliseconds; 15 s means something is wrong.
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      if (exited) throw new Error(`redis-server exited while starting on port ${port}; see ${join(dir, 'redis.log')}`);
      if (await answersPing(port)) return;
      await sleep(50);
    }
    spawned.kill('SIGKILL');
    throw new Error(`redis-server on port ${port} did not answer within 15 s; see ${join(dir, 'redis.log')}`);
  };

  try {
    await launch();
  } catch (error) {
    process.off('exit', onExit);
    throw error;
  }
  started = true;
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    get restarts() {
      return restarts;
    },
    async crash() {
      if (child === undefined) return;
      const victim = child;
      child = undefined;
      victim.kill('SIGKILL');
      await waitExit(victim);
    },
    async start() {
      if (child !== undefined) return;
      await launch();
      if (started) restarts += 1;
    },
    async stop() {
      process.off('exit', onExit);
      if (child === undefined) return;
      const victim = child;
      child = undefined;
      victim.kill('SIGTERM');
      const timer = setTimeout(() => victim.kill('SIGKILL'), 5_000);
      await waitExit(victim);
      clearTimeout(timer);
    },
  };
}
