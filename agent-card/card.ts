// The public agent card (spec 8): what this gateway serves, built from configuration and
// the adapter's skills, with the caching validators of spec 8.6.
import { createHash } from 'node:crypto';
import type { AdapterDescription } from '../adapters/types.ts';
import { IMPLIED_SCOPES } from '../src/auth/scopes.ts';
import type { ExtensionDeclaration } from '../src/extensions/definition.ts';
import { JSONRPC_PATH, REST_BASE_PATH } from '../src/protocol/endpoints.ts';
import { operationScopes } from '../src/protocol/operations/catalog.ts';
import { SCOPES } from '../src/protocol/scopes.ts';
import type { AgentCard, JsonObject, SecurityRequirement } from '../src/protocol/types.ts';
import { LEGACY_PROTOCOL_VERSION, PROTOCOL_VERSION } from '../src/protocol/version.ts';

/** What the gateway enforces, as the card declares it. */
export interface CardSecurity {
  /** Registered partners may sign their requests (RFC 9421). */
  signedRequests: boolean;
  /** Issuers configured by their URL alone: each an OpenID Connect scheme, so a client knows where to get a token. */
  openIdConnect?: readonly { id: string; issuer: string; audience: string | readonly string[]; openIdConnectUrl: string }[];
  /** API keys in X-API-Key (the control plane's: docs/admin-api.md). */
  apiKeys?: boolean;
}

export interface CardInput {
  /** Where the agent's URLs start: the public URL for the default agent, `<publicUrl>/agents/<name>` for each. */
  baseUrl: string;
  name: string;
  description: string;
  version: string;
  /** Skills and modes: the adapter's, the configured ones, or what the downstream agent says. */
  fields: AdapterDescription;
  /** What the gateway enforces; undefined when authentication is off (the card then declares none). */
  security: CardSecurity | undefined;
  /** The extended card (GetExtendedAgentCard) rather than the public one. */
  extended?: boolean;
  /** The extensions the agent declares (spec 4.6): the gateway's and its adapter's. */
  extensions?: readonly ExtensionDeclaration[];
  provider?: { organization: string; url: string };
  documentationUrl?: string;
  iconUrl?: string;
  /** Appended to each security scheme's description (how to get credentials, whom to ask). */
  securityNotes?: string;
  /** The gRPC binding (1.0 only): its host:port, and the tenant that names this agent there. */
  grpc?: { address: string; tenant?: string };
}

export const BEARER_SCHEME = 'bearer';
export const SIGNATURE_SCHEME = 'partnerSignature';
/** The scheme name of an issuer discovered by OpenID Connect: `oidc-<issuer id>`. */
export const openIdConnectSchemeName = (issuerId: string): string => `oidc-${issuerId}`;
export const API_KEY_SCHEME = 'apiKey';

const listed = (names: readonly string[]): string =>
  names.length <= 1 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names.at(-1) as string}`;

/** Which scope each operation needs, as the operation specs declare it (never a hand-kept copy). */
export function scopeText(): string {
  const byScope = new Map<string, string[]>();
  for (const [operation, scope] of Object.entries(operationScopes())) byScope.set(scope, [...(byScope.get(scope) ?? []), operation]);
  const parts = SCOPES.filter((scope) => scope !== 'a2a:admin' && byScope.has(scope)).map((scope) => `${scope} for ${listed(byScope.get(scope) ?? [])}`);
  const adminOnly = byScope.get('a2a:admin') ?? [];
  parts.push(`a2a:admin implies ${listed(IMPLIED_SCOPES['a2a:admin'])}${adminOnly.length > 0 ? `, and alone grants ${listed(adminOnly)}` : ''}`);
  parts.push("operators see their own tenant's tasks, and every tenant's with a2a:platform besides");
  return parts.join('; ');
}

/**
 * An extension as the card declares it: `required` only when true, as the proto3 JSON form
 * leaves a false one out. The card as served then differs from what its signature covers only
 * by empty values, which every verifier drops (docs/card-verification.md).
 */
function declarationOf(extension: ExtensionDeclaration): ExtensionDeclaration {
  const { required, ...rest } = extension;
  return required === true ? { ...rest, required } : { ...rest };
}

/** securitySchemes and securityRequirements describing exactly what the bindings enforce. */
function securityOf(security: CardSecurity, notes: string | undefined): Pick<AgentCard, 'securitySchemes' | 'securityRequirements'> {
  const { signedRequests } = security;
  const securitySchemes: Record<string, JsonObject> = {
    [BEARER_SCHEME]: {
      httpAuthSecurityScheme: {
        scheme: 'Bearer',
        bearerFormat: 'JWT',
        description: `A JWT from an issuer this gateway trusts. Scopes (claim "scope" or "scp"): ${scopeText()}.`,
      },
    },
  };
  const securityRequirements: SecurityRequirement[] = [{ schemes: { [BEARER_SCHEME]: { list: [] } } }];
  // The same bearer token, told apart by where a client gets it: one alternative per provider.
  for (const provider of security.openIdConnect ?? []) {
    const name = openIdConnectSchemeName(provider.id);
    const audiences = typeof provider.audience === 'string' ? [provider.audience] : [...provider.audience];
    securitySchemes[name] = {
      openIdConnectSecurityScheme: {
        openIdConnectUrl: provider.openIdConnectUrl,
        description:
          `An access token (JWT) from the OpenID Connect provider ${provider.issuer}, issued for the audience ${listed(audiences.map((a) => JSON.stringify(a)))}, ` +
          'sent as "Authorization: Bearer <token>". Scopes as for the bearer scheme.',
      },
    };
    securityRequirements.push({ schemes: { [name]: { list: [] } } });
  }
  if (signedRequests) {
    // No scheme in the spec's list describes RFC 9421 signatures; an API-key scheme in the
    // Signature header is the nearest, and its description says what is really checked.
    securitySchemes[SIGNATURE_SCHEME] = {
      apiKeySecurityScheme: {
        location: 'header',
        name: 'Signature',
        description:
          'For registered partners instead of a token: an RFC 9421 HTTP Message Signature (ed25519 or ' +
          'ecdsa-p256-sha256) covering @method, @target-uri and content-digest (RFC 9530), with created, keyid ' +
          'and a fresh nonce parameter. Scopes come from the partner registration.',
      },
    };
    securityRequirements.push({ schemes: { [SIGNATURE_SCHEME]: { list: [] } } });
  }
  if (security.apiKeys === true) {
    securitySchemes[API_KEY_SCHEME] = {
      apiKeySecurityScheme: {
        location: 'header',
        name: 'X-API-Key',
        description: 'Instead of a token: an API key an admin created through the admin API (/admin/v1/api-keys). Its scopes, tenant and expiry are those it was created with.',
      },
    };
    securityRequirements.push({ schemes: { [API_KEY_SCHEME]: { list: [] } } });
  }
  if (notes !== undefined) {
    for (const scheme of Object.values(securitySchemes)) {
      for (const detail of Object.values(scheme)) {
        if (detail !== null && typeof detail === 'object' && !Array.isArray(detail) && typeof detail.description === 'string') detail.description = `${detail.description} ${notes}`;
      }
    }
  }
  return { securitySchemes, securityRequirements };
}

export interface ServedCard {
  card: AgentCard;
  json: string;
  etag: string;
  lastModified: string;
}

export function buildAgentCard(input: CardInput): AgentCard {
  const { fields, security } = input;
  // Extended skills are for authenticated callers; with nobody authenticated there is nothing to withhold.
  const skills = input.extended === true || security === undefined ? [...fields.skills, ...(fields.extendedSkills ?? [])] : fields.skills;
  return {
    name: input.name,
    description: input.description,
    // Preference order (spec 8.3.1): JSON-RPC is the primary binding, 1.0 before 0.3. The 0.3
    // interfaces are the same URLs: A2A-Version (0.3, or none) selects the 0.3 wire form.
    // gRPC comes after the HTTP bindings and only in 1.0 (the 0.3 proto's service is not served).
    supportedInterfaces: [PROTOCOL_VERSION, LEGACY_PROTOCOL_VERSION].flatMap((protocolVersion) => [
      { url: `${input.baseUrl}${JSONRPC_PATH}`, protocolBinding: 'JSONRPC', protocolVersion },
      { url: `${input.baseUrl}${REST_BASE_PATH}`, protocolBinding: 'HTTP+JSON', protocolVersion },
      ...(input.grpc === undefined || protocolVersion !== PROTOCOL_VERSION
        ? []
        : [{ url: input.grpc.address, protocolBinding: 'GRPC', protocolVersion, ...(input.grpc.tenant === undefined ? {} : { tenant: input.grpc.tenant }) }]),
    ]),
    version: input.version,
    // Only what works: streams with replay, no push notifications yet; the extended card
    // exists when there are authenticated callers to serve it to.
    capabilities: {
      streaming: true,
      pushNotifications: false,
      extendedAgentCard: security !== undefined,
      ...(input.extensions === undefined || input.extensions.length === 0 ? {} : { extensions: input.extensions.map(declarationOf) }),
    },
    ...(security === undefined ? {} : securityOf(security, input.securityNotes)),
    ...(input.provider === undefined ? {} : { provider: input.provider }),
    ...(input.documentationUrl === undefined ? {} : { documentationUrl: input.documentationUrl }),
    ...(input.iconUrl === undefined ? {} : { iconUrl: input.iconUrl }),
    defaultInputModes: fields.defaultInputModes ?? ['text/plain'],
    defaultOutputModes: fields.defaultOutputModes ?? ['text/plain'],
    skills,
  };
}

export function serveAgentCard(card: AgentCard, builtAt: Date = new Date()): ServedCard {
  const json = JSON.stringify(card);
  // From the card without its signatures: ECDSA signatures differ on every signing, and every
  // gateway of a deployment must give the same card the same validator.
  const unsigned = JSON.stringify({ ...card, signatures: undefined });
  const etag = `"${createHash('sha256').update(unsigned).digest('base64url').slice(0, 27)}"`;
  return { card, json, etag, lastModified: builtAt.toUTCString() };
}
