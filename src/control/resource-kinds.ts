// The kinds of control-plane resources and what a write of each may hold. Partners and issuers
// take the very fields of the configuration file's auth.partners and auth.issuers (one schema,
// src/config/schema/auth.ts), named by the path instead of `id`; API keys are the control
// plane's own; agents take the configuration's agents.<name>; consumers are the control plane's
// own (src/consumers/consumer-spec.ts). A kind is one entry here plus what gives it effect
// (live-credentials.ts, api-keys.ts, live-agents.ts, src/consumers/consumer-directory.ts).
import { z } from 'zod';
import { issuerSchema, partnerSchema, type IssuerConfig, type PartnerConfig } from '../config/schema/auth.ts';
import { scope } from '../config/schema/scopes.ts';
import { shortName } from '../config/schema/values.ts';
import { AGENT_NAME_PATTERN, type AgentConfig } from '../config/schema/agents.ts';
import type { ConsumerSpec } from '../consumers/consumer-spec.ts';

export const RESOURCE_KINDS = ['api-keys', 'partners', 'issuers', 'agents', 'consumers'] as const;
export type ResourceKind = (typeof RESOURCE_KINDS)[number];

/**
 * The kinds that are the whole platform's, never a tenant's: only a platform admin (a2a:platform)
 * manages them. A consumer is: its plan bounds what a tenant's callers may use, which a tenant
 * admin must not raise for itself.
 */
export const PLATFORM_KINDS: readonly ResourceKind[] = ['issuers', 'agents', 'consumers'];
export const isPlatformKind = (kind: ResourceKind): boolean => PLATFORM_KINDS.includes(kind);

export const isResourceKind = (value: string): value is ResourceKind => (RESOURCE_KINDS as readonly string[]).includes(value);

/** An API key's name is part of the key itself (api-keys.ts), so it holds no "_" or ".". */
export const apiKeyName = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, 'letters, digits and "-" only, 1 to 64 characters');

/** What a write of an API key holds; the secret is never sent in, only made here. */
export const apiKeyInput = z.strictObject({
  /** Who the key is for: its principal is `key:<owner>` (tasks it creates are the owner's). */
  owner: z.string().min(1).max(200),
  /** The tenant the key acts in (default: the writer's). */
  tenant: z.string().max(128).optional(),
  scopes: z.array(scope).min(1).max(32),
  /** When it stops working (ISO 8601, in the future). */
  expiresAt: z.iso.datetime({ offset: true }).refine((at) => Date.parse(at) > Date.now(), 'must be in the future'),
  /** The consumer it belongs to (a later resource kind). */
  consumer: shortName.optional(),
  description: z.string().max(500).optional(),
});
export type ApiKeyInput = z.infer<typeof apiKeyInput>;

/** An API key as stored: its input, and the digest of its secret (never the secret). */
export interface ApiKeySpec extends Omit<ApiKeyInput, 'tenant'> {
  tenant: string;
  /** SHA-256 of the whole key, base64url (api-keys.ts says why a plain digest suffices). */
  keyHash: string;
}

/** Issuers written through the API name their keys by URL or inline: a file path would let an admin make the gateway read its own files. */
export const storedIssuerSchema = issuerSchema.refine((issuer) => issuer.jwksFile === undefined, {
  message: 'jwksFile is for the configuration file only; give jwksUri or jwks',
  path: ['jwksFile'],
});

/** The spec each kind stores. */
export interface KindSpecs {
  'api-keys': ApiKeySpec;
  partners: PartnerConfig;
  issuers: IssuerConfig;
  /** The very definition the configuration file takes under agents.<name> (defaults applied). */
  agents: AgentConfig;
  /** Who the consumer is and its plan. */
  consumers: ConsumerSpec;
}

/** How a partner or issuer body is read: the config's schema, with `id` taken from the path (the caller checks a body's own `id` agrees: idOfBody). */
export function parseNamed<S extends { id: string }>(schema: z.ZodType<S>, name: string, body: unknown): z.ZodSafeParseResult<S> {
  const given = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  return schema.safeParse(given === undefined ? body : { ...given, id: name });
}

/** The `id` a body gives, when it gives one. */
export function idOfBody(body: unknown): unknown {
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>).id : undefined;
}

export const partnerInput: z.ZodType<PartnerConfig> = partnerSchema;
export const issuerInput: z.ZodType<IssuerConfig> = storedIssuerSchema;

/** The names a kind's resources may have (the path segment). */
export const agentName = z.string().regex(AGENT_NAME_PATTERN, 'letters, digits, "_", "." and "-" only, 1 to 64 characters');
export const nameSchemaOf = (kind: ResourceKind): z.ZodType<string> => (kind === 'api-keys' ? apiKeyName : kind === 'agents' ? agentName : shortName);

/**
 * Which tenant a resource belongs to; undefined: the whole platform's. An issuer is: its tokens
 * say which tenant they act in (tenantClaim), so only a platform admin may add one.
 */
export function tenantOfSpec(kind: ResourceKind, spec: KindSpecs[ResourceKind]): string | undefined {
  if (isPlatformKind(kind)) return undefined;
  return (spec as ApiKeySpec | PartnerConfig).tenant;
}

/** The scopes a resource grants its holder (a tenant admin grants only scopes it holds itself). */
export function grantedScopes(kind: ResourceKind, spec: KindSpecs[ResourceKind]): readonly string[] {
  if (isPlatformKind(kind)) return [];
  return (spec as ApiKeySpec | PartnerConfig).scopes;
}
