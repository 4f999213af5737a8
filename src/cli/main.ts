// a2a-gateway command line: `start` (gateway + workers in one process, the first-run default),
// `serve` (gateway only), `worker` (workers only). Configuration: A2A_* variables and an
// optional A2A_CONFIG file; see docs/configuration.md.
import { Agents } from '../agents/agents.ts';
import { ConfigError, loadConfig } from '../config/load.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { startGatewayRole, type GatewayHandle } from '../gateway/server.ts';
import { createLogger } from '../logging/logger.ts';
import { logFailure } from '../logging/operator-failures.ts';
import { runHealthcheckCommand } from './healthcheck.ts';
import { formatInspection, inspectTask } from './inspect.ts';
import { generateKeys, KEYS_USAGE, parseKeysArguments } from './keys.ts';
import { checkRedisReachable, openRedis } from '../redis/connection.ts';
import { gracefulStop } from '../runtime/shutdown-policy.ts';
import { startWorkerRole, type WorkerHandle } from '../runtime/worker-role.ts';
import { startMetricsServer, type MetricsServerHandle } from '../telemetry/metrics-server.ts';
import { startObservability } from '../telemetry/observability.ts';

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

  // Tracing first, so the roles' queues and workers get BullMQ's telemetry hook.
  const observability = startObservability(config, roles);
  let worker: WorkerHandle | undefined;
  let gateway: GatewayHandle | undefined;
  let health: MetricsServerHandle | undefined;
  let metricsPort: MetricsServerHandle | undefined;
  let metricsUrl: string | undefined;
  try {
    if (roles.worker) worker = await startWorkerRole(config, agents, logger, { baseDir });
    if (roles.gateway) gateway = await startGatewayRole(config, agents, logger, { baseDir });
    else if (config.healthPort !== undefined && worker !== undefined) {
      const probed = worker;
      health = await startMetricsServer({ host: config.host, port: config.healthPort, readiness: () => probed.checkReady(), metrics: false, portSetting: 'A2A_HEALTH_PORT' });
    }
    metricsPort = await observability.openMetricsPort([gateway, worker]);
    if (metricsPort !== undefined) metricsUrl = `http://${config.telemetry.metricsHost ?? config.host}:${metricsPort.port}/metrics`;
  } catch (error) {
    await worker?.close().catch(() => undefined);
    await gateway?.close().catch(() => undefined);
    fail((error as Error).message);
  }

  if (gateway !== undefined) {
    const rpc = gateway.card?.card.supportedInterfaces[0]?.url ?? `${gateway.url}/a2a/jsonrpc`;
    const credentials = await bannerCredentials(config, gateway);
    process.stdout.write(
      [
        `a2a-gateway ${command}: ${roles.worker ? 'gateway + workers' : 'gateway'} ${agentsLine(agents)}, Redis ${config.redisUrl} (prefix "${config.keyPrefix}")`,
        `  agent card: ${gateway.url}/.well-known/agent-card.json`,
        `  JSON-RPC:   ${rpc}`,
        `  HTTP+JSON:  ${gateway.card?.card.supportedInterfaces[1]?.url ?? `${gateway.url}/a2a/rest`}`,
        ...(gateway.grpc === undefined ? [] : [`  gRPC:       ${gateway.grpc.address} (lf.a2a.v1.A2AService; agents by "a2a-agent" metadata, see docs/grpc.md)`]),
        ...(agents.list().length > 1
          ? [`  agents:     ${gateway.url}/agents (each at /agents/<name>/…)`, ...agents.list().map((a) => `    ${a.name}: ${gateway?.url}/agents/${encodeURIComponent(a.name)}/.well-known/agent-card.json`)]
          : []),
        ...(metricsUrl === undefined ? [] : [`  metrics:    ${metricsUrl} (unauthenticated; ${gateway.url}/metrics needs a2a:metrics or a2a:platform)`]),
        ...(config.telemetry.otlpEndpoint === undefined ? [] : [`  traces:     OTLP ${config.telemetry.otlpProtocol} to ${config.telemetry.otlpEndpoint}`]),
        ...credentials.notes,
        ...(config.console.enabled
          ? [`  console:    ${gateway.url}/console/${credentials.operatorToken === undefined ? '' : `, sign in with this operator token (${OPERATOR_SCOPES.join(' ')}, ${OPERATOR_TOKEN_TTL_SECONDS / 60} min):`}`]
          : []),
        ...(config.console.enabled && credentials.operatorToken !== undefined
          ? [`    ${credentials.operatorToken}`, `    another: npm run -s token -- --sub you --scope "${OPERATOR_SCOPES.join(' ')}" --ttl ${OPERATOR_TOKEN_TTL_SECONDS}`]
          : []),
        `  try it:`,
        `    curl -s ${rpc} -H 'Content-Type: application/json' -H 'A2A-Version: 1.0' ${credentials.header}\\`,
        `      -d '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"'$(date +%s%N)'","role":"ROLE_USER","parts":[{"text":"hello"}]}}}'`,
        '',
      ].join('\n'),
    );
  } else {
    process.stdout.write(
      `a2a-gateway worker: turns ${agentsLine(agents, worker?.agents)}, Redis ${config.redisUrl} (prefix "${config.keyPrefix}")${metricsUrl === undefined ? '' : `, metrics at ${metricsUrl}`}\n` +
        (health === undefined ? '' : `  health: http://${config.host}:${health.port}/healthz and /readyz\n`),
    );
  }

  // In this order: the gateway stops accepting and ends its streams, then running turns finish,
  // then the spans still buffered are exported.
  const closers: { name: string; close: () => Promise<void> }[] = [];
  for (const [name, handle] of [['gateway', gateway], ['worker', worker], ['health server', health], ['telemetry', observability]] as const) {
    if (handle !== undefined) closers.push({ name, close: () => handle.close() });
  }
  const stop = gracefulStop({
    shutdownGraceMs: config.shutdownGraceMs,
    onStopping: () => {
      health?.markStopping();
      metricsPort?.markStopping();
    },
    closers,
    logger,
    exit: (code) => process.exit(code),
  });
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

/** 'with the "demo" adapter', or the agents with their adapters (and worker concurrency). */
function agentsLine(agents: Agents, only?: string[]): string {
  const listed = agents.list().filter((agent) => only === undefined || only.includes(agent.name));
  if (listed.length === 1 && agents.list().length === 1) {
    const [agent] = listed as [Agents['default']];
    return `with the "${agent.adapter.name}" adapter${only === undefined ? '' : ` (${agent.settings.limits.workerConcurrency} at once)`}`;
  }
  const described = listed.map((agent) => {
    const notes = [`${agent.adapter.name} adapter`];
    if (agent.name === agents.defaultName) notes.push('default');
    if (only !== undefined) notes.push(`${agent.settings.limits.workerConcurrency} at once`);
    return `${agent.name} (${notes.join(', ')})`;
  });
  return `with agents ${described.join(', ')}`;
}

/** The banner's console token: every operator view and action, of every tenant. */
const OPERATOR_SCOPES = ['a2a:admin', 'a2a:platform'] as const;
/** How long it lasts: a first look at the console, not a standing credential in a log. */
const OPERATOR_TOKEN_TTL_SECONDS = 900;

/** How the printed curl line authenticates: a fresh development token, or a hint. */
async function bannerCredentials(config: GatewayConfig, gateway: GatewayHandle): Promise<{ header: string; notes: string[]; operatorToken?: string }> {
  if (!config.auth.enabled) return { header: '', notes: ['  authentication: OFF (auth.enabled=false); every caller is anonymous'] };
  if (gateway.devIssuer === undefined) {
    return { header: `-H "Authorization: Bearer $TOKEN" `, notes: ['  authentication: bearer JWTs from the configured issuers (set TOKEN to one)'] };
  }
  const token = await gateway.devIssuer.mint({ sub: 'quickstart', ttlSeconds: 86_400 });
  // The console is for operators: its token is a separate one, so the curl line's stays
  // unprivileged; and it is short-lived, since the banner lands in logs.
  const operatorToken = config.console.enabled ? await gateway.devIssuer.mint({ sub: 'operator', scopes: [...OPERATOR_SCOPES], ttlSeconds: OPERATOR_TOKEN_TTL_SECONDS }) : undefined;
  return {
    ...(operatorToken === undefined ? {} : { operatorToken }),
    header: `-H 'Authorization: Bearer ${token}' `,
    notes: [
      `  authentication: development issuer (key in ${config.dataDir}); the token below is user "quickstart" for 24 h.`,
      '    WARNING: no token issuer is configured; the development issuer is for local use only (refused when NODE_ENV=production).',
      '    Your own: npm run -s token -- --sub alice [--tenant acme] [--scope "a2a:read a2a:write"]',
    ],
  };
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
