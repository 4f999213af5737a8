// The a2a adapter's options (`adapterOptions`, or A2A_ADAPTER_OPTIONS), checked at load time: a
// bad option stops the start with one line naming it, never a turn that fails later. Secrets are
// named here (an environment variable or a file), never given inline, so they stay out of config
// files, cards and logs.
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import type { JsonObject } from '../../src/protocol/types.ts';

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name');
const filePath = z.string().min(1, 'must be a file path');
const httpUrl = z.url({ protocol: /^https?$/, message: 'must be an http or https URL' });

/** Exactly one of `<name>Env` and `<name>File`. */
function oneSecret(value: Record<string, unknown>, name: string, ctx: z.RefinementCtx): void {
  const given = [`${name}Env`, `${name}File`].filter((key) => value[key] !== undefined);
  if (given.length !== 1) ctx.addIssue({ code: 'custom', path: [`${name}Env`], message: `set exactly one of ${name}Env and ${name}File (the secret is read from there, never written inline)` });
}

const bearerSchema = z
  .strictObject({
    type: z.literal('bearer'),
    /** Environment variable holding the token. */
    tokenEnv: envName.optional(),
    /** File holding the token (re-read when the downstream answers 401, so a rotated token is picked up). */
    tokenFile: filePath.optional(),
  })
  .superRefine((v, ctx) => oneSecret(v, 'token', ctx));

const oauth2Schema = z
  .strictObject({
    type: z.literal('oauth2-client-credentials'),
    /** The authorization server's token endpoint. */
    tokenUrl: httpUrl,
    clientId: z.string().min(1),
    clientSecretEnv: envName.optional(),
    clientSecretFile: filePath.optional(),
    /** Space-separated scopes to ask for. */
    scope: z.string().min(1).optional(),
    /** `audience` parameter some servers require. */
    audience: z.string().min(1).optional(),
    /** How the client authenticates at the token endpoint (RFC 6749 2.3.1). */
    clientAuth: z.enum(['basic', 'post']).default('basic'),
  })
  .superRefine((v, ctx) => oneSecret(v, 'clientSecret', ctx));

const signatureSchema = z
  .strictObject({
    type: z.literal('signature'),
    /** `keyid` the downstream registered for this gateway's partner key. */
    keyId: z.string().min(1),
    /** Private JWK (Ed25519 or P-256) as JSON, in an environment variable or a file. */
    privateKeyEnv: envName.optional(),
    privateKeyFile: filePath.optional(),
  })
  .superRefine((v, ctx) => oneSecret(v, 'privateKey', ctx));

/** An origin (scheme, host, port), written as a URL without path, query or fragment. */
const origin = httpUrl.refine((value) => {
  const parsed = new URL(value);
  return parsed.pathname === '/' && parsed.search === '' && parsed.hash === '' && parsed.username === '' && parsed.password === '';
}, 'must be an origin: scheme, host and port only, e.g. https://agent.example.com');

const credentialsSchema = z.discriminatedUnion('type', [bearerSchema, oauth2Schema, signatureSchema], {
  error: () => 'type must be one of bearer, oauth2-client-credentials, signature',
});

export const remoteA2aOptionsSchema = z.strictObject({
  /** The downstream agent: its base URL (card at /.well-known/agent-card.json) or its card's URL (ending in .json). */
  url: httpUrl,
  /** The downstream card (its interfaces and, for describe(), its skills) is fetched again once it is older than this. */
  cardRefreshSeconds: z.number().int().min(1).default(300),
  /**
   * Origins besides the configured url's that the downstream's card may name for its interfaces
   * (calls, and the credentials with them, go there). By default every call stays on the url's
   * origin, and a card naming another one is refused.
   */
  allowedOrigins: z.array(origin).max(16).default([]),
  /** Outbound credentials; none = anonymous calls. */
  credentials: credentialsSchema.optional(),
  /** First delay before retrying an unreachable downstream; it doubles (with jitter) up to retryMaxDelayMs, until the turn deadline. */
  retryInitialDelayMs: z.number().int().min(1).default(250),
  retryMaxDelayMs: z.number().int().min(1).default(10_000),
  /** First delay between GetTask polls of a downstream task that is not streamed; it doubles while nothing changes, up to pollMaxDelayMs. */
  pollInitialDelayMs: z.number().int().min(1).default(250),
  pollMaxDelayMs: z.number().int().min(1).default(5_000),
  /** One non-streaming call (card, GetTask, CancelTask, a non-streaming send) may take this long before it counts as unreachable. */
  requestTimeoutMs: z.number().int().min(100).default(30_000),
});

export type RemoteA2aOptions = z.infer<typeof remoteA2aOptionsSchema>;
export type CredentialOptions = NonNullable<RemoteA2aOptions['credentials']>;

/** Thrown at load time; the message is one line naming the option. */
export class RemoteA2aOptionsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RemoteA2aOptionsError';
  }
}

/** Validates the options; relative secret files are resolved against `baseDir` (the config file's folder). */
export function parseRemoteA2aOptions(options: JsonObject, baseDir: string): RemoteA2aOptions {
  const result = remoteA2aOptionsSchema.safeParse(options);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => {
      const path = issue.path.map(String).join('.');
      return `option ${path === '' ? '(options)' : path}: ${issue.message}`;
    });
    throw new RemoteA2aOptionsError(`a2a adapter: ${problems.join('; ')}`);
  }
  const parsed = result.data;
  if (parsed.retryMaxDelayMs < parsed.retryInitialDelayMs) throw new RemoteA2aOptionsError('a2a adapter: option retryMaxDelayMs: must be at least retryInitialDelayMs');
  if (parsed.pollMaxDelayMs < parsed.pollInitialDelayMs) throw new RemoteA2aOptionsError('a2a adapter: option pollMaxDelayMs: must be at least pollInitialDelayMs');
  const credentials = parsed.credentials;
  if (credentials !== undefined) {
    const file = (value: string | undefined): string | undefined => (value === undefined || isAbsolute(value) ? value : resolve(baseDir, value));
    if (credentials.type === 'bearer') credentials.tokenFile = file(credentials.tokenFile);
    if (credentials.type === 'oauth2-client-credentials') credentials.clientSecretFile = file(credentials.clientSecretFile);
    if (credentials.type === 'signature') credentials.privateKeyFile = file(credentials.privateKeyFile);
  }
  return parsed;
}
