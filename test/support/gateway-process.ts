// A real `a2a-gateway serve` process on a free port (for tests that need the gateway in a
// process of its own: tracing across processes, SIGTERM drains), or `start` (gateway and workers
// in one process). Stopped by its pid only.
import { spawn, type ChildProcess } from 'node:child_process';
import { whenChildReady } from './child-ready.ts';
import { REDIS_URL, ROOT } from './harness.ts';
import { nodeEntryArgs } from './compiled-sources.ts';

export interface GatewayProcess {
  child: ChildProcess;
  /** http://127.0.0.1:<port> */
  url: string;
  /** The metrics port's /metrics URL, when A2A_METRICS_PORT was given. */
  metricsUrl: string | undefined;
  /** Everything the process printed so far. */
  output(): string;
  /** Resolves with the exit code (or signal) once the process ended. */
  exited: Promise<string>;
  kill(signal?: NodeJS.Signals): void;
}

export async function spawnGatewayProcess(prefix: string, env: Record<string, string> = {}, command: 'serve' | 'start' = 'serve'): Promise<GatewayProcess> {
  const child = spawn(process.execPath, [...nodeEntryArgs('src/cli/main.ts'), command], {
    cwd: ROOT,
    env: { ...process.env, A2A_PORT: '0', A2A_KEY_PREFIX: prefix, A2A_REDIS_URL: REDIS_URL, A2A_LOG_LEVEL: 'warn', A2A_AUTH_ENABLED: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? String(code))));
  const { value: url, output } = await whenChildReady(child, { name: 'gateway process', ready: (out) => /agent card: (http:\/\/[^/\s]+)\//.exec(out)?.[1] });
  return {
    child,
    url,
    metricsUrl: /metrics: +(\S+)/.exec(output())?.[1],
    output,
    exited,
    kill: (signal = 'SIGKILL') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
}
