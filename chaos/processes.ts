// Gateway (`serve`) and worker (`worker`) child processes of the chaos run: spawned exactly as
// an operator would run them, each writing its output to its own log file, killed only by the
// PID we spawned. Readiness is the banner each role prints once it is serving.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { nodeEntryArgs } from '../test/support/compiled-sources.ts';

export type Role = 'serve' | 'worker';

export interface RoleProcess {
  readonly role: Role;
  readonly name: string;
  readonly pid: number;
  /** Gateway base URL (http://127.0.0.1:<port>), from the banner; '' for workers. */
  readonly url: string;
  readonly logFile: string;
  /** False once we killed it or it exited. */
  readonly alive: boolean;
  /** Resolves with the exit code or signal. */
  readonly exited: Promise<string>;
  /** Sends the signal (SIGKILL by default) and waits until the process is gone. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export interface ProcessGroupOptions {
  root: string;
  logDir: string;
  /** Environment shared by every role (Redis URL, prefix, adapter, timings). */
  env: Record<string, string>;
  /** How long a role may take to print its banner. */
  readyTimeoutMs?: number;
}

const BANNER: Record<Role, RegExp> = {
  serve: /JSON-RPC:\s+(http:\/\/\S+)\/a2a\/jsonrpc/,
  worker: /a2a-gateway worker:/,
};

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

export class ProcessGroup {
  private readonly children = new Set<ChildProcess>();
  private readonly handles: RoleProcess[] = [];
  private counter = 0;
  private closed = false;
  /** Processes that ended without being killed by us: a role that dies on a Redis restart is a bug. */
  readonly unexpectedExits: { name: string; how: string; logFile: string }[] = [];
  // If the runner itself dies, its children must not outlive it holding ports and Redis.
  private readonly onExit = (): void => {
    for (const child of this.children) child.kill('SIGKILL');
  };

  constructor(private readonly options: ProcessGroupOptions) {
    process.once('exit', this.onExit);
  }

  alive(role: Role): RoleProcess[] {
    return this.handles.filter((h) => h.role === role && h.alive);
  }

  /** Base URLs of the gateways that are up right now. */
  gatewayUrls(): string[] {
    return this.alive('serve').map((h) => h.url);
  }

  /** Starts one role process; rejects (after killing it) when it is not ready in time. */
  async spawn(role: Role): Promise<RoleProcess> {
    // After killAll nothing may start again: a late respawn would outlive the run.
    if (this.closed) throw new Error(`not starting a ${role}: the process group is closed`);
    this.counter += 1;
    const name = `${role === 'serve' ? 'gateway' : 'worker'}-${this.counter}`;
    const logFile = join(this.options.logDir, `${name}.log`);
    const log = createWriteStream(logFile, { flags: 'a' });
    // From the run's transpiled sources when runChaos built them (about 1.1 CPU-s less per start
    // than through tsx, which bounds how many kills an hour's run can make), else through tsx.
    const child = spawn(process.execPath, [...nodeEntryArgs('src/cli/main.ts'), role], {
      cwd: this.options.root,
      env: { ...process.env, ...this.options.env, A2A_PORT: '0', A2A_HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (child.pid === undefined) throw new Error(`could not spawn ${name}`);
    const pid = child.pid;
    this.children.add(child);
    let alive = true;
    let ready = false;
    let killedByUs = false;
    const exited = new Promise<string>((resolve) =>
      child.once('exit', (code, signal) => {
        alive = false;
        this.children.delete(child);
        const how = signal ?? String(code);
        if (ready && !killedByUs) this.unexpectedExits.push({ name, how, logFile });
        resolve(how);
      }),
    );
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    exited.then(() => log.end(), () => log.end());

    let url = '';
    try {
      url = await new Promise<string>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error(`${name} not ready after ${this.options.readyTimeoutMs ?? 30_000} ms`)), this.options.readyTimeoutMs ?? 30_000);
        child.stdout?.on('data', (chunk: Buffer) => {
          if (out.length > 10_000) return; // the banner is in the first lines
          out += chunk.toString();
          const match = BANNER[role].exec(out);
          if (match) {
            clearTimeout(timer);
            resolve(match[1] ?? '');
          }
        });
        void exited.then((how) => {
          clearTimeout(timer);
          reject(new Error(`${name} exited (${how}) before it was ready`));
        });
      });
    } catch (error) {
      killedByUs = true;
      child.kill('SIGKILL');
      await exited;
      throw new Error(`${(error as Error).message}:\n${tail(logFile)}`);
    }

    ready = true;
    if (this.closed) {
      killedByUs = true;
      child.kill('SIGKILL');
      await exited;
      throw new Error(`${name} started after the process group was closed; killed it`);
    }
    const handle: RoleProcess = {
      role,
      name,
      pid,
      url,
      logFile,
      get alive() {
        return alive;
      },
      exited,
      kill: async (signal = 'SIGKILL') => {
        alive = false;
        killedByUs = true;
        child.kill(signal);
        await exited;
      },
    };
    this.handles.push(handle);
    return handle;
  }

  /** Spawns, retrying (bounded) while it fails, e.g. because Redis is down for a moment. */
  async spawnWithRetry(role: Role, attempts = 5, delayMs = 1_000): Promise<RoleProcess> {
    let last: Error | undefined;
    for (let i = 0; i < attempts && !this.closed; i++) {
      try {
        return await this.spawn(role);
      } catch (error) {
        last = error as Error;
        await sleep(delayMs);
      }
    }
    throw last ?? new Error(`could not start ${role}`);
  }

  /** Kills every child still running, by the PID we spawned, and waits for them. */
  async killAll(): Promise<void> {
    this.closed = true;
    await Promise.all(this.handles.filter((h) => h.alive).map((h) => h.kill('SIGKILL')));
    for (const child of this.children) child.kill('SIGKILL');
    process.off('exit', this.onExit);
  }
}
