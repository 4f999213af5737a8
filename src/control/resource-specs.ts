// A write's body made into the spec a kind stores, or refused naming the field: the zod schema
// of the kind, the keys a partner signs with (imported here, so a key that could never verify
// is refused at the write, not at the first request), and the clashes with the configured and
// stored resources that the verifiers could not tell apart (a partner id or keyId, an issuer's
// id or `iss`).
import { importPartnerKey } from '../auth/signatures/verify-request.ts';
import type { AgentConfig, IssuerConfig, PartnerConfig } from '../config/schema.ts';
import type { ConsumerSpec } from '../consumers/consumer-spec.ts';
import { agentSpec } from './agent-specs.ts';
import { consumerSpec } from './consumer-specs.ts';
import type { AdminCaller } from './admin-caller.ts';
import { conflict, invalidBody, invalidField } from './admin-errors.ts';
import { newApiKey } from './api-keys.ts';
import type { ControlView } from './control-view.ts';
import { apiKeyInput, idOfBody, issuerInput, parseNamed, partnerInput, type ApiKeySpec, type KindSpecs, type ResourceKind } from './resource-kinds.ts';

/** The resources of the configuration file: read-only through the API. */
export interface ConfiguredResources {
  partners: readonly PartnerConfig[];
  issuers: readonly IssuerConfig[];
  /** The configuration file's agents, by name (the implicit "default" agent included). */
  agents?: Readonly<Record<string, AgentConfig>>;
  /** storedAgentAdapters: the adapters an agent written through the API may use (none when absent). */
  agentAdapters?: readonly string[];
  /** The configuration file's consumers, by id. */
  consumers?: Readonly<Record<string, ConsumerSpec>>;
}

export interface SpecContext {
  caller: AdminCaller;
  view: ControlView;
  configured: ConfiguredResources;
}

/** A spec to store, and the key to show once when one was made. */
export interface BuiltSpec<K extends ResourceKind> {
  spec: KindSpecs[K];
  key?: string;
}

const asObject = (body: unknown): Record<string, unknown> | undefined =>
  typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;

export function buildSpec(kind: ResourceKind, name: string, body: unknown, context: SpecContext): BuiltSpec<ResourceKind> {
  if (kind === 'api-keys') return apiKeySpec(name, body, context);
  if (kind === 'partners') return { spec: partnerSpec(name, body, context) };
  if (kind === 'consumers') return { spec: consumerSpec(name, body, context.view, context.configured.consumers ?? {}) };
  if (kind === 'agents') {
    const { configured } = context;
    return { spec: agentSpec(name, body, { configuredNames: Object.keys(configured.agents ?? {}), allowedAdapters: configured.agentAdapters ?? [] }) };
  }
  return { spec: issuerSpec(name, body, context) };
}

function apiKeySpec(name: string, body: unknown, context: SpecContext): BuiltSpec<'api-keys'> {
  const parsed = apiKeyInput.safeParse(body);
  if (!parsed.success) throw invalidBody(`API key "${name}"`, parsed.error);
  const existing = context.view.get('api-keys', name);
  const base = { ...parsed.data, tenant: parsed.data.tenant ?? context.caller.principal.tenant };
  // A replace changes what the key may do, never the key: rotate by creating a new one and deleting this.
  if (existing !== undefined) return { spec: { ...base, keyHash: existing.spec.keyHash } satisfies ApiKeySpec };
  const made = newApiKey(name);
  return { spec: { ...base, keyHash: made.keyHash }, key: made.key };
}

function checkId(name: string, body: unknown): void {
  const id = idOfBody(body);
  if (id !== undefined && id !== name) throw invalidField('id', `is ${JSON.stringify(id)} but the path names "${name}"; leave it out or make them agree`);
}

function partnerSpec(name: string, body: unknown, context: SpecContext): PartnerConfig {
  checkId(name, body);
  const given = asObject(body);
  // A tenant admin's partner is in its tenant unless it says otherwise (and it may not).
  const withTenant = given !== undefined && given.tenant === undefined ? { ...given, tenant: context.caller.principal.tenant } : body;
  const parsed = parseNamed(partnerInput, name, withTenant);
  if (!parsed.success) throw invalidBody(`Partner "${name}"`, parsed.error);
  const partner = parsed.data;
  partner.keys.forEach(({ keyId, publicKey }, index) => {
    try {
      importPartnerKey(name, keyId, publicKey);
    } catch (error) {
      throw invalidField(`keys.${index}.publicKey`, (error as Error).message);
    }
  });
  if (context.configured.partners.some((configured) => configured.id === name)) {
    throw conflict(`Partner "${name}" is defined in the configuration file, which is read-only through the API: change it there.`);
  }
  const others = [...context.configured.partners, ...context.view.list('partners').filter((stored) => stored.name !== name).map((stored) => stored.spec)];
  for (const [index, { keyId }] of partner.keys.entries()) {
    const owner = others.find((other) => other.keys.some((key) => key.keyId === keyId));
    if (owner !== undefined) throw conflict(`keyId "${keyId}" is already partner ${owner.id}'s: key ids are unique across partners.`, `keys.${index}.keyId`);
  }
  return partner;
}

function issuerSpec(name: string, body: unknown, context: SpecContext): IssuerConfig {
  checkId(name, body);
  const parsed = parseNamed(issuerInput, name, body);
  if (!parsed.success) throw invalidBody(`Issuer "${name}"`, parsed.error);
  const issuer = parsed.data;
  if (context.configured.issuers.some((configured) => configured.id === name)) {
    throw conflict(`Issuer "${name}" is defined in the configuration file, which is read-only through the API: change it there.`);
  }
  const others = [...context.configured.issuers, ...context.view.list('issuers').filter((stored) => stored.name !== name).map((stored) => stored.spec)];
  const same = others.find((other) => other.issuer === issuer.issuer);
  if (same !== undefined) throw conflict(`Issuer ${same.id} already trusts "iss" ${issuer.issuer}: one issuer per "iss".`, 'issuer');
  return issuer;
}
