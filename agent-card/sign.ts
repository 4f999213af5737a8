// Agent card signatures (spec 8.4): a detached JWS over the RFC 8785 canonical form of the
// card, after the fields protobuf would not serialize are removed and `signatures` is left out.
import canonicalize from 'canonicalize';
import { calculateJwkThumbprint, FlattenedSign, importJWK, type JWK } from 'jose';
import { publicJwkOf, signingAlgorithmOf } from '../src/auth/keys/key-file.ts';
import type { AgentCard, AgentCardSignature } from '../src/protocol/types.ts';

/**
 * How each field of the card takes part in default-value removal (spec 8.4.1 rule 1), from
 * a2a.proto:
 * - `required`: REQUIRED, kept even at its default value;
 * - `optional`: declared with `optional`, kept whenever present;
 * - `implicit`: plain proto3 scalar, dropped at its default ("", false, 0);
 * - `struct`: google.protobuf.Struct, free-form JSON whose empty members are dropped;
 * - message / repeated / map: pruned inside; dropped when that leaves them empty, unless REQUIRED.
 *
 * Where the spec leaves room (an empty message inside a list or map, an unset message field),
 * the rules follow what the a2a-python and a2a-js verifiers do, so their clients accept our
 * signature: such values are dropped. Fields the table does not know are signed as served.
 */
type FieldRule =
  | 'required'
  | 'optional'
  | 'implicit'
  | 'struct'
  | { message: Shape; required?: true }
  | { repeated: Shape | 'scalar'; required?: true }
  | { map: Shape | 'scalar'; required?: true };
type Shape = { readonly [field: string]: FieldRule };

const STRING_LIST: Shape = { list: { repeated: 'scalar' } };
const SECURITY_REQUIREMENT: Shape = { schemes: { map: STRING_LIST } };
const OAUTH_FLOW: Shape = {
  authorizationUrl: 'implicit',
  tokenUrl: 'implicit',
  refreshUrl: 'implicit',
  deviceAuthorizationUrl: 'implicit',
  scopes: { map: 'scalar' },
  pkceRequired: 'implicit',
};
// REQUIREDness differs between the flows; where it matters (empty required URLs) the card is invalid anyway.
const OAUTH_FLOWS: Shape = {
  authorizationCode: { message: OAUTH_FLOW },
  clientCredentials: { message: OAUTH_FLOW },
  implicit: { message: OAUTH_FLOW },
  password: { message: OAUTH_FLOW },
  deviceCode: { message: OAUTH_FLOW },
};
const SECURITY_SCHEME: Shape = {
  apiKeySecurityScheme: { message: { description: 'implicit', location: 'required', name: 'required' } },
  httpAuthSecurityScheme: { message: { description: 'implicit', scheme: 'required', bearerFormat: 'implicit' } },
  oauth2SecurityScheme: {
    message: { description: 'implicit', flows: { message: OAUTH_FLOWS, required: true }, oauth2MetadataUrl: 'implicit' },
  },
  openIdConnectSecurityScheme: { message: { description: 'implicit', openIdConnectUrl: 'required' } },
  mtlsSecurityScheme: { message: { description: 'implicit' } },
};
const AGENT_CARD: Shape = {
  name: 'required',
  description: 'required',
  supportedInterfaces: {
    repeated: { url: 'required', protocolBinding: 'required', tenant: 'implicit', protocolVersion: 'required' },
    required: true,
  },
  provider: { message: { url: 'required', organization: 'required' } },
  version: 'required',
  documentationUrl: 'optional',
  capabilities: {
    message: {
      streaming: 'optional',
      pushNotifications: 'optional',
      extensions: { repeated: { uri: 'implicit', description: 'implicit', required: 'implicit', params: 'struct' } },
      extendedAgentCard: 'optional',
    },
    required: true,
  },
  securitySchemes: { map: SECURITY_SCHEME },
  securityRequirements: { repeated: SECURITY_REQUIREMENT },
  defaultInputModes: { repeated: 'scalar', required: true },
  defaultOutputModes: { repeated: 'scalar', required: true },
  skills: {
    repeated: {
      id: 'required',
      name: 'required',
      description: 'required',
      tags: { repeated: 'scalar', required: true },
      examples: { repeated: 'scalar' },
      inputModes: { repeated: 'scalar' },
      outputModes: { repeated: 'scalar' },
      securityRequirements: { repeated: SECURITY_REQUIREMENT },
    },
    required: true,
  },
  iconUrl: 'optional',
};

type Json = unknown;

const isObject = (value: Json): value is Record<string, Json> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);
const isEmpty = (value: Json): boolean =>
  value === undefined || (Array.isArray(value) ? value.length === 0 : isObject(value) && Object.keys(value).length === 0);

function pruneMessage(value: Json, shape: Shape): Json {
  // Something other than an object where a message belongs is signed as served: the
  // signature then covers exactly what was published.
  if (!isObject(value)) return value;
  const out: Record<string, Json> = {};
  for (const [key, member] of Object.entries(value)) {
    const rule = Object.hasOwn(shape, key) ? shape[key] : undefined;
    const pruned = rule === undefined ? member : pruneField(member, rule);
    if (pruned !== undefined) out[key] = pruned;
  }
  return out;
}

function pruneField(value: Json, rule: FieldRule): Json {
  // ProtoJSON writes null for an unset field; it is never a value.
  if (value === undefined || value === null) return undefined;
  if (rule === 'required' || rule === 'optional') return value;
  if (rule === 'implicit') return value === '' || value === false || value === 0 ? undefined : value;
  if (rule === 'struct') return pruneFreeForm(value);
  if ('message' in rule) {
    const pruned = pruneMessage(value, rule.message);
    return rule.required || !isEmpty(pruned) ? pruned : undefined;
  }
  if ('repeated' in rule) {
    if (!Array.isArray(value)) return value;
    const shape = rule.repeated;
    const items = shape === 'scalar' ? value : value.map((item) => pruneMessage(item, shape)).filter((item) => !isEmpty(item));
    return rule.required || items.length > 0 ? items : undefined;
  }
  if (!isObject(value)) return value;
  const shape = rule.map;
  const entries: Record<string, Json> = {};
  for (const [key, entry] of Object.entries(value)) {
    const pruned = shape === 'scalar' ? (entry === '' || entry === null ? undefined : entry) : pruneMessage(entry, shape);
    if (!isEmpty(pruned)) entries[key] = pruned;
  }
  return rule.required || Object.keys(entries).length > 0 ? entries : undefined;
}

function pruneFreeForm(value: Json): Json {
  if (value === null || value === '' || value === undefined) return undefined;
  if (Array.isArray(value)) {
    const items = value.map(pruneFreeForm).filter((item) => item !== undefined);
    return items.length > 0 ? items : undefined;
  }
  if (isObject(value)) {
    const out: Record<string, Json> = {};
    for (const [key, member] of Object.entries(value)) {
      const pruned = pruneFreeForm(member);
      if (pruned !== undefined) out[key] = pruned;
    }
    return Object.keys(out).length > 0 ? out : undefined;
  }
  return value;
}

/** The exact bytes (as a string) a card signature covers: spec 8.4.1 applied to `card`. */
export function agentCardSigningPayload(card: AgentCard): string {
  const { signatures: _signatures, ...unsigned } = card;
  const payload = canonicalize(pruneMessage(unsigned, AGENT_CARD));
  if (payload === undefined) throw new Error('the agent card has no JSON form to sign');
  return payload;
}

export interface AgentCardSigningKey {
  /** An Ed25519 or P-256 private JWK; its `kid` (else its RFC 7638 thumbprint) names it in the signature. */
  privateJwk: JWK;
}

export interface SignAgentCardOptions {
  /** Where verifiers can fetch the public key (our /.well-known/jwks.json). */
  jku?: string;
}

/** One signature for `card.signatures`; the card itself is not changed. */
export async function signAgentCard(card: AgentCard, key: AgentCardSigningKey, options: SignAgentCardOptions = {}): Promise<AgentCardSignature> {
  const { privateJwk } = key;
  if (typeof privateJwk.d !== 'string') throw new Error('signing the agent card needs the private JWK (it has no "d")');
  const alg = signingAlgorithmOf(privateJwk);
  const kid = privateJwk.kid ?? (await calculateJwkThumbprint(publicJwkOf(privateJwk), 'sha256'));
  const header = { alg, typ: 'JOSE', kid, ...(options.jku !== undefined ? { jku: options.jku } : {}) };
  const jws = await new FlattenedSign(new TextEncoder().encode(agentCardSigningPayload(card)))
    .setProtectedHeader(header)
    .sign(await importJWK(privateJwk, alg));
  if (jws.protected === undefined) throw new Error('the JWS came back without its protected header');
  return { protected: jws.protected, signature: jws.signature };
}
