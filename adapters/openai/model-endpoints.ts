// The model servers an agent calls: the one baseURL, or each of its endpoints, each with its own
// client. A client is bound to its endpoint's origin with that endpoint's credentials only: its
// API key and the caller token (whose audience is that origin) never go to another endpoint, and
// a redirect elsewhere loses both (see caller-header-fetch.ts).
import OpenAI from 'openai';
import type { AdapterEnvironment, CallerTokens } from '../types.ts';
import { boundedFetch } from '../bounded-response.ts';
import { isLoopbackOrHttps, pinCallerHeader } from '../caller-header-fetch.ts';
import { resolveApiKey, type ApiKeySource } from './api-key.ts';
import type { RoutedEndpoint } from './endpoint-router.ts';
import type { EndpointOptions, OpenAIAdapterOptions } from './options.ts';

export interface ModelEndpoint extends RoutedEndpoint {
  readonly baseURL: string;
  /** The baseURL's origin: what logs name, and the caller token's audience. */
  readonly origin: string;
  /** The model name sent to this server. */
  readonly model: string;
  readonly client: OpenAI;
  readonly keys: ApiKeySource;
  /** The caller token for this server (AdapterEnvironment.callerIdentity) and its audience. */
  readonly caller?: { tokens: CallerTokens; origin: string };
}

/** An endpoint that names no key source sends none: the agent's key is not lent to another server. */
function noKey(name: string): ApiKeySource {
  return {
    apiKey: undefined,
    origin: `no key (endpoint ${name} names neither apiKeyEnv nor apiKeyFile)`,
    hint: `No API key was sent to endpoint ${name}: give it apiKeyEnv or apiKeyFile.`,
    redact: (text) => text,
  };
}

function keysOf(endpoint: EndpointOptions, name: string): ApiKeySource {
  if (endpoint.apiKeyEnv === undefined && endpoint.apiKeyFile === undefined) return noKey(name);
  try {
    return resolveApiKey(endpoint);
  } catch (error) {
    throw new Error(`${(error as Error).message} (endpoint ${name})`);
  }
}

function clientOf(baseURL: string, keys: ApiKeySource, options: OpenAIAdapterOptions, environment: AdapterEnvironment, callerOrigin: string | undefined): OpenAI {
  const bounded = boundedFetch(environment.backendLimits);
  return new OpenAI({
    baseURL,
    // The client insists on a credential; without a key its Authorization header is removed
    // below, which is what Ollama and other key-less servers expect.
    apiKey: keys.apiKey ?? 'no-key',
    ...(keys.apiKey === undefined ? { defaultHeaders: { Authorization: null } } : {}),
    // Only what the options say: no organization, project or admin key picked up from OPENAI_* variables.
    organization: null,
    project: null,
    adminAPIKey: null,
    // Retries are the adapter's (retry-policy.ts): its waits end when the turn is canceled.
    maxRetries: 0,
    timeout: options.requestTimeoutMs,
    // Every answer and stream of the model server is read within the agent's backendLimits.
    fetch: environment.callerIdentity === undefined || callerOrigin === undefined ? bounded : pinCallerHeader(bounded, environment.callerIdentity.header, callerOrigin),
    // The client's own log lines would go to the console, outside the gateway's logger.
    logLevel: 'off',
  });
}

function build(name: string, baseURL: string, model: string, keys: ApiKeySource, routing: { priority: number; weight: number }, options: OpenAIAdapterOptions, environment: AdapterEnvironment): ModelEndpoint {
  const url = new URL(baseURL);
  const origin = url.origin;
  if (environment.callerIdentity !== undefined && !isLoopbackOrHttps(url)) {
    throw new Error(`callerIdentity is on, but ${name === origin ? 'baseURL' : `endpoint ${name}`} ${origin} is plain http: the caller token would travel in the clear; use https (plain http is allowed to loopback addresses only)`);
  }
  const caller = environment.callerIdentity === undefined ? undefined : { tokens: environment.callerIdentity, origin };
  const client = clientOf(baseURL, keys, options, environment, caller?.origin);
  return { name, ...routing, baseURL, origin, model, client, keys, ...(caller === undefined ? {} : { caller }) };
}

/** The agent's endpoints, in the order listed; throws naming an endpoint whose key or URL cannot be used. */
export function modelEndpoints(options: OpenAIAdapterOptions, environment: AdapterEnvironment): ModelEndpoint[] {
  if (options.endpoints === undefined) {
    const baseURL = options.baseURL as string;
    return [build(new URL(baseURL).origin, baseURL, options.model, resolveApiKey(options), { priority: 1, weight: 1 }, options, environment)];
  }
  const names = new Set<string>();
  return options.endpoints.map((endpoint, index) => {
    let name = endpoint.name ?? new URL(endpoint.baseURL).origin;
    // Two unnamed endpoints on one origin (two models of one server) get told apart by their place.
    if (names.has(name)) {
      if (endpoint.name !== undefined) throw new Error(`openai adapter: two endpoints are named ${name}; names must differ`);
      name = `${name}#${index + 1}`;
    }
    names.add(name);
    return build(name, endpoint.baseURL, endpoint.model ?? options.model, keysOf(endpoint, name), { priority: endpoint.priority ?? index + 1, weight: endpoint.weight }, options, environment);
  });
}
