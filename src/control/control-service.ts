// What the admin API does with the control plane (src/gateway/admin-v1-routes.ts is its HTTP
// face): list, get, put and delete resources of each kind, and read the audit, each within the
// caller's reach (admin-caller.ts). Reads come from this process's view; a write goes through
// one script that checks the expected version and appends the audit entry (src/store/control/),
// and is answered once this process's view holds it, so a read after it sees it. A write that
// is refused (bad field, stale version, clash, another tenant's) changes nothing anywhere.
import type { ExpectedVersion } from '../store/control/control-store.ts';
import type { AuditEntry } from '../store/control/control-store.ts';
import { newId } from '../ids.ts';
import type { ConsumerUsage } from '../consumers/consumer-usage.ts';
import { mayReach, requireGrantable, requireKindAccess, type AdminCaller } from './admin-caller.ts';
import { conflict, notFound, staleVersion, storeFull } from './admin-errors.ts';
import type { ControlPlane } from './control-plane.ts';
import { grantedScopes, isPlatformKind, tenantOfSpec, type ResourceKind } from './resource-kinds.ts';
import { buildSpec, type ConfiguredResources } from './resource-specs.ts';
import { claimsOf, clashOf } from './resource-claims.ts';
import type { ControlResource, StoredResource } from './resource.ts';

/** A resource as the API shows it: its spec's fields (never an API key's digest) beside its metadata. */
export type ResourceBody = Record<string, unknown> & { name: string; version: number; source: 'store' | 'config' };

export interface Page<T> {
  items: T[];
  /** Pass as pageToken for the next page; absent on the last. */
  nextPageToken?: string;
}

export interface PageRequest {
  pageSize: number;
  pageToken?: string | undefined;
}

/** How long a write's answer waits for this process to apply it (an agent's adapter to load); past it, it is answered anyway. */
const APPLY_WAIT_MS = 2_000;

/** Audit entries a tenant admin's audit page looks through at most, so a page costs a bounded read. */
const AUDIT_SCAN_LIMIT = 2_000;

/** A tenant admin changes only its tenant's resources: the write script checks it too. */
const reachOf = (caller: AdminCaller): { reach?: string } => (caller.platform ? {} : { reach: caller.principal.tenant });

export function bodyOf(resource: ControlResource): ResourceBody {
  const { keyHash: _digest, ...spec } = resource.spec as unknown as Record<string, unknown>;
  return { ...spec, name: resource.name, version: resource.version, source: 'store', tenant: resource.tenant, updatedAt: resource.updatedAt, updatedBy: resource.updatedBy };
}

export class ControlService {
  constructor(
    private readonly plane: ControlPlane,
    private readonly configured: ConfiguredResources,
    private readonly now: () => number = Date.now,
    /** Resolves once what the view holds is in effect in this process (stored agents loaded: live-agents.ts). */
    private readonly applied: () => Promise<void> = () => Promise.resolve(),
    /** Reads a consumer's usage (src/consumers/consumer-usage.ts); absent: usage is not served. */
    private readonly usageOf?: (name: string) => Promise<ConsumerUsage | undefined>,
  ) {}

  /** GET /admin/v1/consumers/{name}/usage: the consumer's usage today and this month. */
  async consumerUsage(caller: AdminCaller, name: string): Promise<ConsumerUsage> {
    requireKindAccess(caller, 'consumers');
    await this.plane.view.refresh();
    const defined = this.plane.view.get('consumers', name) !== undefined || this.configured.consumers?.[name] !== undefined;
    const usage = defined ? await this.usageOf?.(name) : undefined;
    if (usage === undefined) throw notFound('consumers', name);
    return usage;
  }

  /** Waits (briefly) until this process applied the write, so a request right after it sees it here. */
  private async caughtUp(seq: number): Promise<void> {
    await this.plane.view.catchUp(seq);
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, APPLY_WAIT_MS)));
    await Promise.race([this.applied(), bound]).finally(() => clearTimeout(timer));
  }

  /** The resources of `kind` the caller may see, configured ones first, then by name. */
  list(caller: AdminCaller, kind: ResourceKind, page: PageRequest): Page<ResourceBody> {
    requireKindAccess(caller, kind);
    const all = [...this.configuredBodies(kind), ...this.plane.view.list(kind).map(bodyOf)]
      .filter((body) => mayReach(caller, kind, isPlatformKind(kind) ? undefined : String(body.tenant ?? '')))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.source < b.source ? -1 : 1));
    const after = page.pageToken;
    const rest = after === undefined ? all : all.filter((body) => `${body.name}\u0000${body.source}` > after);
    const items = rest.slice(0, page.pageSize);
    const last = items.at(-1);
    return rest.length > items.length && last !== undefined ? { items, nextPageToken: `${last.name}\u0000${last.source}` } : { items };
  }

  get(caller: AdminCaller, kind: ResourceKind, name: string): ResourceBody {
    requireKindAccess(caller, kind);
    const stored = this.plane.view.get(kind, name);
    if (stored !== undefined && mayReach(caller, kind, isPlatformKind(kind) ? undefined : stored.tenant)) return bodyOf(stored);
    const configured = this.configuredBodies(kind).find((body) => body.name === name);
    if (configured !== undefined && mayReach(caller, kind, isPlatformKind(kind) ? undefined : String(configured.tenant ?? ''))) return configured;
    throw notFound(kind, name);
  }

  /** Creates or replaces `kind`/`name`; `key` is a new API key's secret, shown this once. */
  async put(caller: AdminCaller, kind: ResourceKind, name: string, body: unknown, expected: ExpectedVersion): Promise<{ resource: ResourceBody; created: boolean; key?: string }> {
    requireKindAccess(caller, kind);
    // The latest set first: the clash and tenant checks below read it.
    await this.plane.view.refresh();
    const existing = this.plane.view.get(kind, name);
    if (existing !== undefined && !mayReach(caller, kind, existing.tenant)) throw notFound(kind, name);
    const built = buildSpec(kind, name, body, { caller, view: this.plane.view, configured: this.configured });
    const tenant = tenantOfSpec(kind, built.spec);
    requireGrantable(caller, tenant, grantedScopes(kind, built.spec));
    const stored: StoredResource = { kind, name, tenant: tenant ?? '', spec: built.spec, updatedAt: new Date(this.now()).toISOString(), updatedBy: caller.actor };
    // A new key must never replace another's secret: it is written only where none is.
    const outcome = await this.plane.store.write({
      kind,
      name,
      tenant: stored.tenant,
      expected: built.key !== undefined && 'any' in expected ? { absent: true } : expected,
      resource: JSON.stringify(stored),
      actor: caller.actor,
      nowMs: this.now(),
      claims: claimsOf(kind, built.spec),
      ...reachOf(caller),
    });
    if (!outcome.ok) {
      if ('missing' in outcome) throw notFound(kind, name);
      if ('full' in outcome) throw storeFull(outcome.full);
      if ('clash' in outcome) throw clashOf(kind, built.spec, outcome.clash.claim, outcome.clash.holder);
      throw staleVersion(kind, name, 'stale' in outcome ? outcome.stale : 0);
    }
    await this.caughtUp(outcome.seq);
    const resource = bodyOf({ ...stored, version: outcome.version });
    return { resource, created: outcome.action === 'create', ...(built.key === undefined ? {} : { key: built.key }) };
  }

  /** POST /admin/v1/api-keys: a key under a new name. */
  createApiKey(caller: AdminCaller, body: unknown): Promise<{ resource: ResourceBody; created: boolean; key?: string }> {
    return this.put(caller, 'api-keys', newId().toLowerCase(), body, { absent: true });
  }

  async remove(caller: AdminCaller, kind: ResourceKind, name: string, expected: ExpectedVersion): Promise<void> {
    requireKindAccess(caller, kind);
    await this.plane.view.refresh();
    const existing = this.plane.view.get(kind, name);
    if (existing === undefined || !mayReach(caller, kind, existing.tenant)) {
      if (this.configuredBodies(kind).some((body) => body.name === name)) {
        throw conflict(`The ${kind} resource "${name}" is defined in the configuration file, which is read-only through the API: remove it there.`);
      }
      throw notFound(kind, name);
    }
    const outcome = await this.plane.store.write({ kind, name, tenant: existing.tenant, expected, actor: caller.actor, nowMs: this.now(), ...reachOf(caller) });
    if (!outcome.ok) {
      if ('missing' in outcome) throw notFound(kind, name);
      throw staleVersion(kind, name, 'stale' in outcome ? outcome.stale : 0);
    }
    await this.caughtUp(outcome.seq);
  }

  /** The audit newest first: a tenant admin sees its tenant's API keys and partners only. */
  async audit(caller: AdminCaller, page: PageRequest): Promise<Page<AuditEntry>> {
    const { entries, next } = await this.plane.store.auditPage({
      ...(page.pageToken === undefined ? {} : { before: page.pageToken }),
      count: page.pageSize,
      keep: (entry) => mayReach(caller, entry.kind as ResourceKind, isPlatformKind(entry.kind as ResourceKind) ? undefined : entry.tenant),
      scanLimit: AUDIT_SCAN_LIMIT,
    });
    return next === undefined ? { items: entries } : { items: entries, nextPageToken: next };
  }

  private configuredBodies(kind: ResourceKind): ResourceBody[] {
    if (kind === 'partners') return this.configured.partners.map((partner) => ({ ...partner, name: partner.id, version: 0, source: 'config' }));
    if (kind === 'issuers') return this.configured.issuers.map((issuer) => ({ ...issuer, name: issuer.id, version: 0, source: 'config' }));
    if (kind === 'agents') return Object.entries(this.configured.agents ?? {}).map(([name, agent]) => ({ ...agent, name, version: 0, source: 'config' }));
    if (kind === 'consumers') return Object.entries(this.configured.consumers ?? {}).map(([name, consumer]) => ({ ...consumer, name, version: 0, source: 'config', tenant: '' }));
    return [];
  }
}
