// compose.yaml and the Dockerfile, run without a container engine: each service's command is
// started as the image would start it (its ENTRYPOINT, its ENV, the service's environment),
// against a redis-server of the test's own with the compose file's Redis options. Only what a
// container gives for free is replaced: the Redis host name, free ports, the data volume.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.ts';
import { SHUTDOWN_MARGIN_MS } from '../src/runtime/shutdown-policy.ts';
import { nodeEntryArgs } from './support/compiled-sources.ts';
import { composeDurationMs, readCompose, readDockerfile, type ComposeService } from './support/deployment-files.ts';
import { ROOT, rpc, textMessage, waitFor } from './support/harness.ts';
import { freePort, startOwnRedis, type OwnRedis } from './support/redis-server.ts';

const execFileAsync = promisify(execFile);
const image = readDockerfile();
const compose = readCompose();
const gatewayService = compose.services.gateway as ComposeService;
const workerService = compose.services.worker as ComposeService;

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

let redis: OwnRedis;
let dataDir: string;
const started: Started[] = [];

/** The environment a container of this service gets, with the container-only parts replaced. */
function environmentOf(service: ComposeService): Record<string, string> {
  const environment: Record<string, string> = { ...image.env, ...(service.environment ?? {}) };
  // The published URL names the host port Compose maps to 8080; here the port is picked freely.
  delete environment.A2A_PUBLIC_URL;
  return {
    PATH: process.env.PATH ?? '',
    ...environment,
    A2A_REDIS_URL: redis.url,
    A2A_HOST: '127.0.0.1',
    A2A_PORT: '0',
    ...(environment.A2A_HEALTH_PORT === undefined ? {} : { A2A_HEALTH_PORT: '0' }),
    A2A_DATA_DIR: dataDir,
  };
}

/**
 * The image runs the compiled CLI through bin/a2a-gateway.js (test/package.test.ts runs that
 * from the packed package); here the same CLI runs from this run's build of the checkout.
 */
function entryArgs(args: readonly string[]): string[] {
  return args.flatMap((arg) => (arg === 'bin/a2a-gateway.js' ? nodeEntryArgs('src/cli/main.ts') : arg === 'dist/src/cli/token.js' ? nodeEntryArgs('src/cli/token.ts') : [arg]));
}

/** Starts the service's command the way the image's ENTRYPOINT runs it, in the image's WORKDIR (the repository). */
function startService(service: ComposeService, waitFor: RegExp): Promise<Started & { match: RegExpExecArray }> {
  const [program, ...entryPoint] = image.entrypoint;
  expect(program).toBe('node');
  const child = spawn(process.execPath, [...entryArgs(entryPoint), ...(service.command ?? image.cmd)], { cwd: ROOT, env: environmentOf(service), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const entry: Started = { child, output: () => out, exited };
  started.push(entry);
  return new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      const match = waitFor.exec(out);
      if (match !== null) {
        clearInterval(timer);
        resolve({ ...entry, match });
      }
    }, 50);
    void exited.then((code) => {
      clearInterval(timer);
      reject(new Error(`${(service.command ?? []).join(' ')} exited (${String(code)}) before it was up:\n${out}`));
    });
    setTimeout(() => {
      clearInterval(timer);
      reject(new Error(`${(service.command ?? []).join(' ')} not up after 60 s:\n${out}`));
    }, 60_000).unref();
  });
}

/**
 * Runs a compose healthcheck (CMD form) in the service's environment, with the ports the process
 * got: a gateway's on A2A_PORT; a worker's on A2A_HEALTH_PORT, with nothing listening on A2A_PORT.
 */
async function runHealthcheck(service: ComposeService, ports: { A2A_PORT: string; A2A_HEALTH_PORT?: string }): Promise<void> {
  const [form, program, ...args] = service.healthcheck?.test ?? [];
  expect(form).toBe('CMD');
  expect(program).toBe('node');
  expect(args, 'the image\'s own health check').toEqual(image.healthcheck?.slice(1));
  const environment = { ...environmentOf(service), ...ports };
  if (ports.A2A_HEALTH_PORT === undefined) delete (environment as Record<string, string | undefined>).A2A_HEALTH_PORT;
  await execFileAsync(process.execPath, entryArgs(args), { cwd: ROOT, env: environment, timeout: 15_000 });
}

let gatewayUrl = '';
let token = '';
const workerHealthPorts: string[] = [];
let gateway: Started;
const workers: Started[] = [];

beforeAll(async () => {
  const redisCommand = compose.services.redis?.command ?? [];
  expect(redisCommand[0]).toBe('redis-server');
  redis = await startOwnRedis({ args: redisCommand.slice(1) });
  dataDir = mkdtempSync(join(tmpdir(), 'a2a-compose-data-'));
  const up = await startService(gatewayService, /agent card: (http:\/\/127\.0\.0\.1:\d+)\/\.well-known[\s\S]*Authorization: Bearer ([^'\s]+)'/);
  gateway = up;
  gatewayUrl = up.match[1] as string;
  token = up.match[2] as string;
  for (let replica = 0; replica < (workerService.deploy?.replicas ?? 1); replica += 1) {
    const worker = await startService(workerService, /health: http:\/\/127\.0\.0\.1:(\d+)\/healthz/);
    workers.push(worker);
    workerHealthPorts.push(worker.match[1] as string);
  }
}, 180_000);

afterAll(async () => {
  for (const { child } of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(started.map(({ exited }) => exited));
  await redis?.stop();
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
});

describe('compose.yaml, its commands run as processes', () => {
  it('runs Redis with an append-only file on a volume', async () => {
    const client = new Redis(redis.url);
    try {
      expect(await client.config('GET', 'appendonly')).toEqual(['appendonly', 'yes']);
    } finally {
      client.disconnect();
    }
    expect(compose.services.redis?.volumes?.some((volume) => volume.endsWith(':/data'))).toBe(true);
  });

  it('has one gateway and two workers sharing the data volume at the data directory', () => {
    expect(gatewayService.command).toEqual(['serve']);
    expect(workerService.command).toEqual(['worker']);
    expect(workerService.deploy?.replicas).toBe(2);
    for (const service of [gatewayService, workerService]) {
      const environment = { ...image.env, ...service.environment };
      expect(environment.A2A_REDIS_URL).toBe('redis://redis:6379');
      expect(service.volumes).toContain(`a2a-data:${environment.A2A_DATA_DIR}`);
    }
  });

  it('answers /readyz on the gateway and on each worker, as its healthcheck asks', async () => {
    expect(workerHealthPorts).toHaveLength(2);
    expect((await fetch(`${gatewayUrl}/readyz`)).status).toBe(200);
    await runHealthcheck(gatewayService, { A2A_PORT: new URL(gatewayUrl).port });
    for (const port of workerHealthPorts) {
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      await runHealthcheck(workerService, { A2A_PORT: String(await freePort()), A2A_HEALTH_PORT: port });
    }
  });

  it('completes a task sent to the gateway on a worker, with a token minted as compose.yaml says', async () => {
    const mint = 'node dist/src/cli/token.js --sub alice';
    expect(readFileSync(join(ROOT, 'compose.yaml'), 'utf8')).toContain(`docker compose exec gateway ${mint}`);
    const [, ...mintArgs] = mint.split(' ');
    const minted = (await execFileAsync(process.execPath, entryArgs(mintArgs), { cwd: ROOT, env: environmentOf(gatewayService), timeout: 30_000 })).stdout.trim();
    const { body } = await rpc(`${gatewayUrl}/a2a/jsonrpc`, 'SendMessage', { message: textMessage('echo through compose') }, { Authorization: `Bearer ${minted}` });
    const task = (body.result as { task: { status: { state: string }; artifacts: { parts: { text: string }[] }[] } }).task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts[0]?.parts[0]?.text).toBe('echo through compose');
  });

  it('gives a stopping process longer than shutdownGraceMs before it is killed', () => {
    for (const service of [gatewayService, workerService]) {
      const { config } = loadConfig({ ...image.env, ...service.environment });
      expect(composeDurationMs(service.stop_grace_period ?? '10s')).toBeGreaterThanOrEqual(config.shutdownGraceMs + SHUTDOWN_MARGIN_MS);
    }
  });

  it('drains on SIGTERM: workers finish the running turn, say not-ready meanwhile, and exit 0', async () => {
    const auth = { Authorization: `Bearer ${token}` };
    const { body } = await rpc(`${gatewayUrl}/a2a/jsonrpc`, 'SendMessage', { message: textMessage('long 40'), configuration: { returnImmediately: true } }, auth);
    const taskId = (body.result as { task: { id: string } }).task.id;
    const stateOf = async (): Promise<string> =>
      ((await rpc(`${gatewayUrl}/a2a/jsonrpc`, 'GetTask', { id: taskId }, auth)).body.result as { status: { state: string } }).status.state;
    await waitFor(async () => ((await stateOf()) === 'TASK_STATE_WORKING' ? true : undefined), 30_000, 'the long task to start');

    for (const worker of workers) worker.child.kill('SIGTERM');
    const notReady = await waitFor(
      async () => {
        for (const port of workerHealthPorts) {
          const status = await fetch(`http://127.0.0.1:${port}/readyz`).then((response) => response.status, () => undefined);
          if (status === 503) return true;
        }
        return undefined;
      },
      10_000,
      'a draining worker to answer /readyz with 503',
    );
    expect(notReady).toBe(true);
    const codes = await Promise.all(workers.map((worker) => worker.exited));
    expect(codes).toEqual([0, 0]);
    // The turn finished within the grace period rather than being cut off.
    expect(await stateOf()).toBe('TASK_STATE_COMPLETED');

    gateway.child.kill('SIGTERM');
    expect(await gateway.exited).toBe(0);
  });
});

describe('the Dockerfile', () => {
  it('builds in one stage and runs in another: Node 24 LTS slim, production dependencies only, a non-root user', () => {
    expect(image.stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of image.stages) {
      const [, major] = /^node:(\d+)[.-][\w.-]*slim/.exec(stage.from) ?? [];
      expect(Number(major), stage.from).toBe(24);
    }
    const [build] = image.stages;
    expect(image.copiedFromStages).toEqual([{ stage: build?.name, source: '/app/dist', destination: './dist' }]);
    expect(image.runCommands.some((command) => /npm ci\b.*--omit=dev/.test(command))).toBe(true);
    expect(image.copied, 'no TypeScript sources in the runtime stage').not.toContain('src');
    expect(image.user).toBe('node');
    expect(image.entrypoint).toEqual(['node', 'bin/a2a-gateway.js']);
    expect(image.cmd).toEqual(['serve']);
    expect(image.healthcheck).toEqual(['node', 'bin/a2a-gateway.js', 'healthcheck']);
  });

  it('runs only production dependencies: what the build compiles imports nothing else', () => {
    const packageJson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const tsconfig = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[] };
    // Loaded only when a TypeScript adapter module is configured (adapters/module-loader.ts), with an error naming the fix when missing.
    const optional = new Set(['tsx']);
    const problems: string[] = [];
    const visit = (dir: string): void => {
      // A folder with a package.json of its own (examples/sdk-agent) is a project apart that
      // installs its own dependencies; the gateway's runtime never imports it.
      if (dir !== '.' && existsSync(join(ROOT, dir, 'package.json'))) return;
      for (const name of readdirSync(join(ROOT, dir))) {
        const path = join(dir, name);
        if (statSync(join(ROOT, path)).isDirectory()) visit(path);
        else if (/\.(ts|mts|js|mjs)$/.test(name)) {
          const text = readFileSync(join(ROOT, path), 'utf8');
          for (const [, specifier] of text.matchAll(/(?:^|\n)\s*(?:import|export)\s(?!type\s)[^'"]*?from\s+'([^']+)'|import\('([^']+)'\)/g)) {
            if (specifier === undefined) continue;
            if (specifier.startsWith('.')) {
              const top = join(dir, specifier).split('/')[0] as string;
              if (!tsconfig.include.includes(top)) problems.push(`${path} imports ${specifier}, outside what the build compiles`);
              continue;
            }
            const pkg = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : (specifier.split('/')[0] as string);
            if (specifier.startsWith('node:') || builtinModules.includes(pkg) || optional.has(pkg)) continue;
            if (packageJson.dependencies[pkg] === undefined) problems.push(`${path} imports ${pkg}, which npm ci --omit=dev does not install`);
          }
        }
      }
    };
    for (const dir of tsconfig.include) visit(dir);
    expect(problems).toEqual([]);
  });
});
