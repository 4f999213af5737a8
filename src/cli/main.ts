// a2a-gateway command line: `start` (gateway + workers in one process, the first-run default),
// `serve` (gateway only), `worker` (workers only). Configuration: A2A_* variables and an
// optional A2A_CONFIG file; see docs/configuration.md.
import { Agents } from '../agents/agents.ts';
import { ConfigError, loadConfig } from '../config/load.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { composeProcess, type ComposedProcess } from '../app/process.ts';
import { createLogger } from '../logging/logger.ts';
import { logFailure } from '../logging/operator-failures.ts';
import { startupBanner } from './banner.ts';
import { runHealthcheckCommand } from './healthcheck.ts';
import { formatInspection, inspectTask } from './inspect.ts';
import { runAdminCommand } from './admin.ts';
import { generateKeys, KEYS_USAGE, parseKeysArguments } from './keys.ts';
import { checkRedisReachable, openRedis } from '../redis/connection.ts';
import { gracefulStop } from '../runtime/shutdown-policy.ts';

const USAGE = `Usage: a2a-gateway <command>

  start    gateway, workers and the configured adapter in one process (default)
  serve    the gateway only (HTTP, A2A bindings, streams)
  worker   turn workers only
  tasks inspect <taskId> [--json]
           an operator's view of one task: state, owner, versions, lease, turns, steps
  healthcheck
           exits 0 when this container's gateway (A2A_PORT) or worker (A2A_HEALTH_PORT) is ready, else 1
  keys generate [--dir <folder>] [--partner <id>] [--force]
           writes card-signing, webhook-signing and partner keys and prints the configuration using them
  admin <api-keys|partners|issuers> list|get|put|delete, admin audit|export|apply
           the control plane's admin API of a running gateway (a2a-gateway admin for details)

Configuration comes from A2A_* environment variables and an optional A2A_CONFIG file (JSON or YAML); every setting: docs/configuration.md.`;

function rolesFor(command: string): GatewayConfig['roles'] | undefined {
  if (command === 'start') return { gateway: true, worker: true };
  if (command === 'serve') return { gateway: true, worker: false };
  if (command === 'worker') return { gateway: false, worker: true };
  return undefined;
}

function fail(message: string): never {
  process.stderr.write(`a2a-gateway: ${message}\n`);
  process.exit(1);
}

const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;

/**
 * A refused configuration: the plain line for whoever reads the terminal, then the same as one
 * structured line (failure "config-rejected") for the log pipeline, which skips plain text.
 * The configuration is what failed, so the level comes straight from A2A_LOG_LEVEL.
 */
function failConfiguration(error: Error, stage: 'settings' | 'agents'): never {
  process.stderr.write(`a2a-gateway: ${error.message}\n`);
  const wanted = process.env.A2A_LOG_LEVEL;
  const level = LOG_LEVELS.find((l) => l === wanted) ?? 'info';
  logFailure(createLogger(level), 'config-rejected', { cause: error.message, stage });
  process.exit(1);
}

async function main(argv: string[]): Promise<void> {
  const command = argv[0] ?? 'start';
  if (command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (command === 'tasks') {
    await runTasksCommand(argv.slice(1));
    return;
  }
  if (command === 'admin') {
    process.exitCode = await runAdminCommand(argv.slice(1));
    return;
  }
  if (command === 'healthcheck') {
    await runHealthcheckCommand();
    return;
  }
  if (command === 'keys') {
    const options = parseKeysArguments(argv.slice(1));
    if (typeof options === 'string') fail(`keys: ${options}\n${KEYS_USAGE}`);
    try {
      process.stdout.write((await generateKeys(options)).configuration);
    } catch (error) {
      fail((error as Error).message);
    }
    return;
  }
  const roles = rolesFor(command);
  if (roles === undefined) fail(`unknown command "${command}".\n\n${USAGE}`);

  let loaded;
  try {
    loaded = loadConfig(process.env, { roles });
  } catch (error) {
    if (error instanceof ConfigError) failConfiguration(error, 'settings');
    throw error;
  }
  const { config, baseDir } = loaded;
  const logger = createLogger(config.logLevel);
  for (const warning of loaded.warnings) logger.warn(warning);

  try {
    await checkRedisReachable(config);
  } catch (error) {
    fail((error as Error).message);
  }
  let agents: Agents;
  try {
    agents = await Agents.load(config, baseDir);
  } catch (error) {
    failConfiguration(error as Error, 'agents');
  }

  let started: ComposedProcess;
  try {
    started = await composeProcess({ config, roles, agents, logger, baseDir });
  } catch (error) {
    fail((error as Error).message);
  }
  process.stdout.write(await startupBanner(command, config, agents, started));

  // Drain (not ready, still serving for shutdownDrainMs), then stop: the gateway stops accepting
  // and ends its streams, then running turns finish, then the spans still buffered are exported.
  const stop = gracefulStop({
    shutdownGraceMs: config.shutdownGraceMs,
    closers: [{ name: 'process', close: () => started.lifecycle.stop() }],
    logger,
    exit: (code) => process.exit(code),
  });
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

async function runTasksCommand(args: string[]): Promise<void> {
  const [sub, taskId] = args;
  if (sub !== 'inspect' || taskId === undefined) fail(`usage: a2a-gateway tasks inspect <taskId> [--json]`);
  let config;
  try {
    config = loadConfig(process.env).config;
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message);
    throw error;
  }
  try {
    await checkRedisReachable(config);
  } catch (error) {
    fail((error as Error).message);
  }
  const redis = openRedis(config, 'commands');
  try {
    const inspection = await inspectTask(redis, config.keyPrefix, taskId);
    if (inspection === undefined) fail(`no task ${taskId} under key prefix "${config.keyPrefix}" (expired, or another A2A_KEY_PREFIX?)`);
    process.stdout.write(`${args.includes('--json') ? JSON.stringify(inspection, null, 2) : formatInspection(inspection)}\n`);
  } finally {
    redis.disconnect();
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`a2a-gateway: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
