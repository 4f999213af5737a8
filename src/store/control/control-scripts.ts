// The control plane's scripts (lua/), described for callScript: keys and arguments by name in
// their Lua's order, replies decoded. Both touch one slot: `{control}` (control-keys.ts).
import { arg, defineScript } from '../script-call.ts';
import { str } from '../script-reply.ts';

/** What a write expects of the resource's current version (HTTP If-Match / If-None-Match). */
export type ExpectedVersion = { any: true } | { exists: true } | { absent: true } | { version: number };

const encodeExpected = (expected: ExpectedVersion): string =>
  'version' in expected ? String(expected.version) : 'absent' in expected ? '0' : 'exists' in expected ? '*' : '';

export type WriteAction = 'create' | 'replace' | 'delete';

export type WriteOutcome =
  | { ok: true; version: number; seq: number; action: WriteAction }
  /** The resource is at another version than the writer expected (0: it does not exist). */
  | { ok: false; stale: number }
  | { ok: false; missing: true }
  /** The store holds as many resources as it may (`count`). */
  | { ok: false; full: number }
  /** Another resource (`holder`, "<kind>/<name>") holds `claim`. */
  | { ok: false; clash: { claim: string; holder: string } };

export const controlWriteScript = defineScript({
  name: 'controlWrite',
  keys: ['versions', 'resources', 'sequence', 'audit', 'claims', 'claimed'],
  args: {
    field: arg.text,
    expected: encodeExpected,
    op: (value: 'put' | 'delete') => value,
    /** The resource as JSON; '' for a delete. */
    resource: arg.optionalText,
    actor: arg.text,
    kind: arg.text,
    name: arg.text,
    tenant: arg.text,
    nowMs: arg.int,
    auditKept: arg.int,
    maxResources: arg.int,
    /** The only tenant whose existing resource may be changed; undefined: any. */
    reach: (tenant: string | undefined) => tenant ?? '*',
    /** What the resource must hold alone (none for a delete): no newline inside one. */
    claims: (claims: readonly string[] | undefined) => (claims ?? []).join('\n'),
  },
  reply: (reply): WriteOutcome => {
    if (reply[0] === 'OK') return { ok: true, version: Number(reply[1]), seq: Number(reply[2]), action: str(reply[3]) as WriteAction };
    if (reply[0] === 'STALE') return { ok: false, stale: Number(reply[1]) };
    if (reply[0] === 'FULL') return { ok: false, full: Number(reply[1]) };
    if (reply[0] === 'CLASH') return { ok: false, clash: { claim: str(reply[1]), holder: str(reply[2]) } };
    return { ok: false, missing: true };
  },
});

/** One stored resource as read: its field, JSON and version. */
export interface StoredResourceText {
  field: string;
  json: string;
  version: number;
}

export const controlReadScript = defineScript({
  name: 'controlRead',
  keys: ['versions', 'resources', 'sequence'],
  args: {},
  reply: (reply): { seq: number; resources: StoredResourceText[] } => {
    const resources: StoredResourceText[] = [];
    for (let i = 1; i + 2 < reply.length; i += 3) {
      resources.push({ field: str(reply[i]), json: str(reply[i + 1]), version: Number(reply[i + 2]) });
    }
    return { seq: Number(reply[0] ?? 0), resources };
  },
});

export const controlClaimScript = defineScript({
  name: 'controlClaim',
  keys: ['resources', 'claims', 'claimed'],
  args: {
    field: arg.text,
    /** The resource JSON as the caller read it: nothing is entered if it changed since. */
    json: arg.text,
    claims: (claims: readonly string[]) => claims.join('\n'),
  },
  reply: (reply): number => Number(reply[0] ?? 0),
});
