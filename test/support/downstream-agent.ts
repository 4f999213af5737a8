// Starts the scripted downstream A2A agent (test/fixtures/downstream-agent) as a real child
// process on a free port, with a task store file so it can be killed and restarted on the same
// port without forgetting its tasks.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentStats } from '../fixtures/downstream-agent/file-task-store.ts';
import { printed, whenChildReady } from './child-ready.ts';
import { nodeEntryArgs } from './compiled-sources.ts';
import { ROOT } from './harness.ts';

export interface DownstreamAgentProcess {
  url: string;
  port: number;
  pid: number;
  storeFile: string;
  /** What the agent received (messages by messageId, cancels, auth failures). */
  stats(): Promise<AgentStats>;
  /** SIGKILLs the agent and waits for it to be gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port with the same store. */
  restart(): Promise<void>;
  /** Stops it (if running) and removes its store. */
  close(): Promise<void>;
}

export interface DownstreamAgentSpawnOptions {
  protocol?: '1.0' | '0.3';
  streaming?: boolean;
  bindings?: ('jsonrpc' | 'rest')[];
  auth?: 'none' | 'bearer' | 'oauth2';
  env?: Record<string, string>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function launch(args: string[], env: Record<string, string>): Promise<{ child: ChildProcess; exited: Promise<void> }> {
  const child = spawn(process.execPath, [...nodeEntryArgs('test/fixtures/downstream-agent/main.ts'), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await whenChildReady(child, { name: 'downstream agent', ready: printed('downstream agent listening') });
  return { child, exited };
}

export async function spawnDownstreamAgent(options: DownstreamAgentSpawnOptions = {}): Promise<DownstreamAgentProcess> {
  const port = await freePort();
  const storeFile = join(tmpdir(), `a2a-downstream-${randomBytes(6).toString('hex')}.json`);
  const args = [
    '--port', String(port),
    '--protocol', options.protocol ?? '1.0',
    '--streaming', String(options.streaming ?? true),
    '--bindings', (options.bindings ?? ['jsonrpc', 'rest']).join(','),
    '--auth', options.auth ?? 'none',
    '--store', storeFile,
  ];
  const env = options.env ?? {};
  let running = await launch(args, env);
  const url = `http://127.0.0.1:${port}`;
  const stop = async (signal: NodeJS.Signals): Promise<void> => {
    const { child, exited } = running;
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  return {
    url,
    port,
    get pid() {
      return running.child.pid as number;
    },
    storeFile,
    async stats() {
      const response = await fetch(`${url}/_test/stats`);
      return (await response.json()) as AgentStats;
    },
    kill: () => stop('SIGKILL'),
    async restart() {
      running = await launch(args, env);
    },
    async close() {
      await stop('SIGTERM');
      await rm(storeFile, { force: true });
    },
  };
}
