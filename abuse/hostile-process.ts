// The hostile backends in a process of their own, as a real backend would be: pouring hundreds
// of megabytes is work, and done in the run's own process it would delay the victim's timing
// and the samples that the run reports. The child sends its URLs once and its stats whenever
// they change; the run reads the latest it has heard.
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { startHostileBackends, type HostileBackends, type HostileStats } from './hostile-backends.ts';
import { asOtherMachine } from './priority.ts';

type FromChild = { kind: 'ready'; modelBaseUrl: string; agentUrl: string } | { kind: 'stats'; stats: HostileStats };

/** Starts abuse/hostile-process.ts as a child; the same interface as startHostileBackends(). */
export async function startHostileProcess(root: string): Promise<HostileBackends> {
  const child = fork(join(root, 'abuse/hostile-process.ts'), ['child'], { cwd: root, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  asOtherMachine(child.pid);
  const stats: HostileStats = { bytesSent: {}, redirected: 0, credentialsLeaked: [] };
  const ready = await new Promise<{ modelBaseUrl: string; agentUrl: string }>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the hostile backends exited (${String(code)}) before they were ready`)));
    child.on('message', (message: FromChild) => {
      if (message.kind === 'ready') resolve(message);
      else Object.assign(stats, message.stats);
    });
  });
  return {
    ...ready,
    stats,
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

if (process.argv[2] === 'child' && process.send !== undefined) {
  const send = (message: FromChild): void => {
    process.send?.(message);
  };
  const backends = await startHostileBackends((stats) => send({ kind: 'stats', stats }));
  process.once('SIGTERM', () => {
    backends.close().finally(() => process.exit(0));
  });
  send({ kind: 'ready', modelBaseUrl: backends.modelBaseUrl, agentUrl: backends.agentUrl });
}
