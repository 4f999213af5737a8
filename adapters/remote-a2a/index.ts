// The a2a adapter: this gateway in front of an existing A2A agent (the "downstream"). Callers
// get the gateway's durability (leases, fencing, replay, staged cancel, step journal) and its
// security; the downstream gets one message per turn, sent by the official SDK client with this
// agent's own outbound credentials.
import type { JsonObject } from '../../src/protocol/types.ts';
import type { Adapter, AdapterContext, AdapterDescription, AdapterEnvironment, TurnOutcome } from '../types.ts';
import { boundedFetch, DEFAULT_ADAPTER_ENVIRONMENT } from '../bounded-response.ts';
import { callerCallContext, callerTokenInterceptor } from './caller-token.ts';
import { createCredentials, isLoopbackHttp } from './credentials/index.ts';
import { describeDownstream } from './describe.ts';
import { createDownstreamFetch } from './downstream-fetch.ts';
import { DownstreamAgent } from './downstream-agent.ts';
import { parseRemoteA2aOptions } from './options.ts';
import { OriginPin } from './origin-pin.ts';
import { RemoteTurn } from './turn.ts';

export const REMOTE_A2A_ADAPTER_NAME = 'a2a';
export const REMOTE_A2A_ADAPTER_VERSION = '1.0.0';

/** The adapter's own skills: only published when an agent's card does not take them from downstream. */
const PLACEHOLDER_SKILL = {
  id: 'remote-agent',
  name: 'Remote agent',
  description: 'Forwards each message to a remote A2A agent and relays its answers.',
  tags: ['a2a', 'remote'],
};

/** Validates `options` (a bad one throws one line naming it) and reads the secrets they name. */
export function createRemoteA2aAdapter(options: JsonObject, baseDir: string = process.cwd(), environment: AdapterEnvironment = DEFAULT_ADAPTER_ENVIRONMENT): Adapter {
  const parsed = parseRemoteA2aOptions(options, baseDir);
  // Every byte the downstream (or its token endpoint) sends is read through the agent's backendLimits.
  const bounded = boundedFetch(environment.backendLimits);
  const credentials = createCredentials(parsed.credentials, { requestTimeoutMs: parsed.requestTimeoutMs, fetch: bounded });
  const pin = new OriginPin(parsed.url, parsed.allowedOrigins);
  const caller = environment.callerIdentity;
  if (caller !== undefined && new URL(parsed.url).protocol !== 'https:' && !isLoopbackHttp(new URL(parsed.url))) {
    throw new Error(`callerIdentity is on, but url ${pin.pinned} is plain http: the caller token would travel in the clear; use https (plain http is allowed to loopback addresses only)`);
  }
  const downstream = new DownstreamAgent({
    url: parsed.url,
    fetch: createDownstreamFetch({ credentials, requestTimeoutMs: parsed.requestTimeoutMs, fetch: bounded, pin, ...(caller === undefined ? {} : { callerHeader: caller.header }) }),
    refreshMs: parsed.cardRefreshSeconds * 1000,
    pin,
    ...(caller === undefined ? {} : { interceptors: [callerTokenInterceptor(caller.header)] }),
  });
  let described: { fetchedAtMs: number; description: AdapterDescription } | undefined;
  return {
    name: REMOTE_A2A_ADAPTER_NAME,
    version: REMOTE_A2A_ADAPTER_VERSION,
    skills: [PLACEHOLDER_SKILL],
    // A downstream agent may answer with a Message (spec 3.1.1); so does this adapter then.
    directMessages: true,
    /** The downstream card's skills (an agent's card takes them "from downstream", the default for a2a agents). */
    async describe(): Promise<AdapterDescription> {
      const connection = await downstream.connection();
      // One description per card fetch (the extended card costs a call).
      if (described?.fetchedAtMs !== connection.fetchedAtMs) described = { fetchedAtMs: connection.fetchedAtMs, description: await describeDownstream(connection) };
      return described.description;
    },
    run(ctx: AdapterContext): Promise<TurnOutcome> {
      return new RemoteTurn(ctx, { downstream, options: parsed, callContext: callerCallContext(ctx, caller, pin.pinned) }).run();
    },
  };
}
