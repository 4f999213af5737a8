// What `start`, `serve` and `worker` print once they are up: where the agent card is, how to
// call it (a curl line that works as printed), and where the probes and metrics are.
import type { Agents } from '../agents/agents.ts';
import type { ComposedProcess } from '../app/process.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { GatewayRole } from '../gateway/server.ts';

export async function startupBanner(command: string, config: GatewayConfig, agents: Agents, started: ComposedProcess): Promise<string> {
  const { gateway, worker, health, metricsUrl } = started;
  if (gateway === undefined) {
    return (
      `a2a-gateway worker: turns ${agentsLine(agents, worker?.agents)}, Redis ${config.redisUrl} (prefix "${config.keyPrefix}")${metricsUrl === undefined ? '' : `, metrics at ${metricsUrl}`}\n` +
      (health === undefined ? '' : `  health: http://${config.host}:${health.port}/healthz and /readyz\n`)
    );
  }
  const rpc = gateway.card?.card.supportedInterfaces[0]?.url ?? `${gateway.url}/a2a/jsonrpc`;
  const credentials = await bannerCredentials(config, gateway);
  return [
    `a2a-gateway ${command}: ${worker !== undefined ? 'gateway + workers' : 'gateway'} ${agentsLine(agents)}, Redis ${config.redisUrl} (prefix "${config.keyPrefix}")`,
    `  agent card: ${gateway.url}/.well-known/agent-card.json`,
    `  JSON-RPC:   ${rpc}`,
    `  HTTP+JSON:  ${gateway.card?.card.supportedInterfaces[1]?.url ?? `${gateway.url}/a2a/rest`}`,
    ...(gateway.grpc === undefined ? [] : [`  gRPC:       ${gateway.grpc.address} (lf.a2a.v1.A2AService; agents by "a2a-agent" metadata, see docs/grpc.md)`]),
    ...(agents.list().length > 1
      ? [`  agents:     ${gateway.url}/agents (each at /agents/<name>/…)`, ...agents.list().map((a) => `    ${a.name}: ${gateway.url}/agents/${encodeURIComponent(a.name)}/.well-known/agent-card.json`)]
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
  ].join('\n');
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
async function bannerCredentials(config: GatewayConfig, gateway: GatewayRole): Promise<{ header: string; notes: string[]; operatorToken?: string }> {
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
