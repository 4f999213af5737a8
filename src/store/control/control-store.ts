// The control plane's Redis side: resources written and deleted by script (control-scripts.ts),
// the whole set read in one consistent picture, the change sequence, the audit stream read
// newest first, and the change notifications. src/control/ holds what the resources mean.
import type { RedisClient } from '../../redis/connection.ts';
import { scriptCaller, type ScriptCaller } from '../script-call.ts';
import { controlKeys, resourceField, type ControlKeys } from './control-keys.ts';
import { controlClaimScript, controlReadScript, controlWriteScript, type ExpectedVersion, type StoredResourceText, type WriteOutcome } from './control-scripts.ts';

export type { ExpectedVersion, WriteOutcome } from './control-scripts.ts';

export interface ControlWrite {
  kind: string;
  name: string;
  /** The tenant the resource belongs to ('' = the default tenant or platform-wide), for the audit. */
  tenant: string;
  expected: ExpectedVersion;
  /** The resource to store; absent: delete it. */
  resource?: string;
  actor: string;
  nowMs: number;
  /** The only tenant whose existing resource this write may change (a tenant admin's); undefined: any. */
  reach?: string;
  /** Values the resource must hold alone (a partner's keyIds, an issuer's iss), checked and taken in the write script. */
  claims?: readonly string[];
}

/** One audit entry: who changed what, to which version, when. */
export interface AuditEntry {
  /** The stream id: the cursor of the page after this entry. */
  id: string;
  actor: string;
  action: string;
  kind: string;
  name: string;
  tenant: string;
  version: number;
  seq: number;
  /** ISO 8601. */
  at: string;
}

export interface ControlStoreLimits {
  /** Audit entries kept (about: the stream is trimmed in whole nodes). */
  auditKept: number;
  /** Most resources of all kinds together. */
  maxResources: number;
}

/** How many stream entries one audit read takes at most. */
const AUDIT_BATCH = 200;

export class ControlStore {
  readonly keys: ControlKeys;
  private readonly call: ScriptCaller;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    private readonly limits: ControlStoreLimits,
  ) {
    this.keys = controlKeys(prefix);
    this.call = scriptCaller(redis);
  }

  /** Writes or deletes one resource; on success tells every process (a lost message is caught by their polling). */
  async write(change: ControlWrite): Promise<WriteOutcome> {
    const outcome = await this.call(
      controlWriteScript,
      { versions: this.keys.versions, resources: this.keys.resources, sequence: this.keys.sequence, audit: this.keys.audit, claims: this.keys.claims, claimed: this.keys.claimed },
      {
        field: resourceField(change.kind, change.name),
        expected: change.expected,
        op: change.resource === undefined ? 'delete' : 'put',
        resource: change.resource,
        actor: change.actor,
        kind: change.kind,
        name: change.name,
        tenant: change.tenant,
        nowMs: change.nowMs,
        auditKept: this.limits.auditKept,
        maxResources: this.limits.maxResources,
        reach: change.reach,
        claims: change.resource === undefined ? undefined : change.claims,
      },
    );
    if (outcome.ok) await this.redis.publish(this.keys.changes, String(outcome.seq)).catch(() => undefined);
    return outcome;
  }

  /** Every resource and the sequence they are current at. */
  readAll(): Promise<{ seq: number; resources: StoredResourceText[] }> {
    return this.call(controlReadScript, { versions: this.keys.versions, resources: this.keys.resources, sequence: this.keys.sequence }, {});
  }

  /**
   * Enters the claims of resources written before the claims index existed (`json` as read by
   * readAll, so one changed since is left alone); a resource indexed already is skipped.
   */
  async adoptClaims(resources: readonly { field: string; json: string; claims: readonly string[] }[]): Promise<void> {
    for (const { field, json, claims } of resources) {
      if (claims.length === 0) continue;
      await this.call(controlClaimScript, { resources: this.keys.resources, claims: this.keys.claims, claimed: this.keys.claimed }, { field, json, claims });
    }
  }

  /** Fields that hold an entry in the claims index (resources written since it exists). */
  async claimedFields(): Promise<Set<string>> {
    return new Set(await this.redis.hkeys(this.keys.claimed));
  }

  /** The change sequence now (0 before the first change). */
  async sequence(): Promise<number> {
    return Number((await this.redis.get(this.keys.sequence)) ?? 0);
  }

  /** Calls `onChange` for every change notification `subscriber` (a connection of its own) receives. */
  async subscribe(subscriber: RedisClient, onChange: () => void): Promise<void> {
    subscriber.on('message', (channel: string) => {
      if (channel === this.keys.changes) onChange();
    });
    await subscriber.subscribe(this.keys.changes);
  }

  /**
   * Audit entries newest first, after the cursor `before` (an entry id; none: the newest), those
   * `keep` accepts, at most `count`. Reads at most `scanLimit` entries, so a filter that matches
   * little costs a bounded amount: `next` is where to go on (undefined: nothing older).
   */
  async auditPage(options: { before?: string; count: number; keep: (entry: AuditEntry) => boolean; scanLimit: number }): Promise<{ entries: AuditEntry[]; next: string | undefined }> {
    const entries: AuditEntry[] = [];
    let cursor = options.before;
    let scanned = 0;
    while (entries.length < options.count && scanned < options.scanLimit) {
      const batch = (await this.redis.xrevrange(this.keys.audit, cursor === undefined ? '+' : `(${cursor}`, '-', 'COUNT', AUDIT_BATCH)) as [string, string[]][];
      if (batch.length === 0) return { entries, next: undefined };
      for (const [id, fields] of batch) {
        scanned += 1;
        cursor = id;
        const entry = auditEntryOf(id, fields);
        if (options.keep(entry)) entries.push(entry);
        if (entries.length === options.count || scanned >= options.scanLimit) break;
      }
      if (batch.length < AUDIT_BATCH && cursor === batch.at(-1)?.[0]) {
        return { entries, next: entries.length === options.count ? cursor : undefined };
      }
    }
    return { entries, next: cursor };
  }
}

function auditEntryOf(id: string, fields: string[]): AuditEntry {
  const values = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) values.set(fields[i] as string, fields[i + 1] as string);
  const text = (name: string): string => values.get(name) ?? '';
  return {
    id,
    actor: text('actor'),
    action: text('action'),
    kind: text('kind'),
    name: text('name'),
    tenant: text('tenant'),
    version: Number(text('version')),
    seq: Number(text('seq')),
    at: new Date(Number(text('at'))).toISOString(),
  };
}
