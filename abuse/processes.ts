// The gateway and the worker as real processes (`a2a-gateway serve` / `worker`), and what the
// run reads from outside a process: its resident memory and open file descriptors (/proc).
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface RoleProcess {
  pid: number;
  /** Banner line of a gateway: its URL. */
  url: string;
  /** False once the process has exited, for whatever reason. */
  alive(): boolean;
  stop(): Promise<void>;
}

/**
 * Extra node options for one role, from ABUSE_SERVE_NODE_ARGS / ABUSE_WORKER_NODE_ARGS (space
 * separated), e.g. `--cpu-prof --cpu-prof-dir=prof` to see where a row's CPU goes.
 */
function nodeArgsOf(role: 'serve' | 'worker'): string[] {
  return (process.env[`ABUSE_${role.toUpperCase()}_NODE_ARGS`] ?? '').split(' ').filter((arg) => arg !== '');
}

export async function startRole(root: string, role: 'serve' | 'worker', env: Record<string, string>): Promise<RoleProcess> {
  const child: ChildProcess = spawn(process.execPath, [...nodeArgsOf(role), '--import', 'tsx', join(root, 'src/cli/main.ts'), role], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${role} not ready after 30 s:\n${out}`)), 30_000);
    const onData = (chunk: Buffer): void => {
      out += chunk.toString();
      const ready = role === 'serve' ? /agent card: (http:\/\/\S+)\/\.well-known/.exec(out)?.[1] : out.includes('a2a-gateway worker:') ? 'worker' : undefined;
      if (ready !== undefined) {
        clearTimeout(timer);
        resolve(ready);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${role} exited (${String(code)}) before it was ready:\n${out}`));
    });
  });
  child.stdout?.resume();
  child.stderr?.resume();
  return {
    pid: child.pid as number,
    url,
    alive: () => child.exitCode === null && child.signalCode === null,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      // A profiled process writes its profile as it exits: give it time to.
      const timer = setTimeout(() => child.kill('SIGKILL'), nodeArgsOf(role).length > 0 ? 60_000 : 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export interface ProcessSample {
  rssMb: number;
  fds: number;
}

export function sampleProcess(pid: number): ProcessSample {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    return { rssMb: Math.round(rssKb / 1024), fds: readdirSync(`/proc/${pid}/fd`).length };
  } catch {
    return { rssMb: 0, fds: 0 };
  }
}

/** CPU seconds (user + system) the process has used so far; 0 once it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    // utime and stime: fields 14 and 15 of stat, 12 and 13 after the command name.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}
