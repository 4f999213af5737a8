// The agent card as a 0.3 client reads it: one `url` and `preferredTransport` (the card's first
// 0.3 interface) with the others as `additionalInterfaces`, a card-level `protocolVersion`,
// `supportsAuthenticatedExtendedCard`, and security in the 0.3 shape (OpenAPI-style schemes
// and plain requirement maps) on JSON-RPC and the well-known URL, or the 0.3 proto's ProtoJSON
// on HTTP+JSON (GET /v1/card). The well-known card also embeds the 1.0 `supportedInterfaces`,
// so a 1.0 client that omits A2A-Version still finds its interfaces.
import { LEGACY_PROTOCOL_VERSION } from '../../protocol/version.ts';
import type { AgentCard, JsonObject } from '../../protocol/types.ts';
import type { LegacyObject } from './json-form.ts';

const isObject = (value: unknown): value is JsonObject => value !== null && typeof value === 'object' && !Array.isArray(value);

/** A 1.0 security scheme (a proto oneof) in the 0.3 JSON schema's OpenAPI-like shape. */
function securitySchemeToLegacy(scheme: JsonObject): LegacyObject {
  const [kind, body] = Object.entries(scheme)[0] ?? [];
  const details = isObject(body) ? body : {};
  const description = typeof details.description === 'string' ? { description: details.description } : {};
  switch (kind) {
    case 'httpAuthSecurityScheme':
      return { type: 'http', scheme: String(details.scheme ?? '').toLowerCase(), ...(details.bearerFormat === undefined ? {} : { bearerFormat: details.bearerFormat }), ...description };
    case 'apiKeySecurityScheme':
      return { type: 'apiKey', in: details.location === 'query' || details.location === 'cookie' ? details.location : 'header', name: details.name, ...description };
    case 'openIdConnectSecurityScheme':
      return { type: 'openIdConnect', openIdConnectUrl: details.openIdConnectUrl, ...description };
    case 'mtlsSecurityScheme':
      return { type: 'mutualTLS', ...description };
    case 'oauth2SecurityScheme':
      return { type: 'oauth2', flows: details.flows ?? {}, ...description };
    default:
      return { ...details };
  }
}

export interface LegacyCardOptions {
  /** 'json' for JSON-RPC and the well-known URL, 'proto' for the 0.3 HTTP+JSON binding. */
  form: 'json' | 'proto';
  /** Embed the 1.0 supportedInterfaces (the well-known card serves both kinds of client). */
  embedSupportedInterfaces?: boolean;
}

export function legacyCardOf(card: AgentCard, options: LegacyCardOptions): LegacyObject {
  const legacyInterfaces = card.supportedInterfaces.filter((i) => i.protocolVersion === LEGACY_PROTOCOL_VERSION);
  const [primary, ...others] = legacyInterfaces.length > 0 ? legacyInterfaces : card.supportedInterfaces;
  const result: LegacyObject = {
    protocolVersion: `${LEGACY_PROTOCOL_VERSION}.0`,
    name: card.name,
    description: card.description,
    url: primary?.url,
    preferredTransport: primary?.protocolBinding,
    version: card.version,
    capabilities: {
      streaming: card.capabilities.streaming ?? false,
      pushNotifications: card.capabilities.pushNotifications ?? false,
      ...(card.capabilities.extensions === undefined ? {} : { extensions: card.capabilities.extensions }),
    },
    defaultInputModes: card.defaultInputModes,
    defaultOutputModes: card.defaultOutputModes,
    skills: card.skills,
    supportsAuthenticatedExtendedCard: card.capabilities.extendedAgentCard ?? false,
  };
  if (others.length > 0) result.additionalInterfaces = others.map((i) => ({ url: i.url, transport: i.protocolBinding }));
  if (card.provider !== undefined) result.provider = card.provider;
  if (card.documentationUrl !== undefined) result.documentationUrl = card.documentationUrl;
  if (card.iconUrl !== undefined) result.iconUrl = card.iconUrl;
  if (card.securitySchemes !== undefined) {
    // The 0.3 proto spells security schemes as the 1.0 one does (a oneof); its JSON schema like OpenAPI.
    result.securitySchemes =
      options.form === 'proto' ? card.securitySchemes : Object.fromEntries(Object.entries(card.securitySchemes).map(([name, scheme]) => [name, securitySchemeToLegacy(scheme)]));
  }
  if (card.securityRequirements !== undefined) {
    result.security =
      options.form === 'proto'
        ? card.securityRequirements
        : card.securityRequirements.map((requirement) => Object.fromEntries(Object.entries(requirement.schemes).map(([name, scopes]) => [name, [...scopes.list]])));
  }
  if (options.embedSupportedInterfaces === true) result.supportedInterfaces = card.supportedInterfaces;
  return result;
}
