// What a resource must hold alone across the control plane: a partner's keyIds (a signature
// names its key by keyId only) and an issuer's `iss` (a token names its issuer by it). The write
// script checks and takes them in the same step as the write (src/store/control/), so two
// gateways writing clashing resources at once cannot both succeed: the check against this
// process's view (resource-specs.ts) answers most clashes early, this one is authoritative.
import { conflict } from './admin-errors.ts';
import type { A2AError } from '../protocol/errors.ts';
import type { ControlStore } from '../store/control/control-store.ts';
import { isResourceKind, type KindSpecs, type ResourceKind } from './resource-kinds.ts';
import type { StoredResource } from './resource.ts';

/** JSON-quoted, so a value never holds the newline the script splits claims on. */
const claim = (what: string, value: string): string => `${what}:${JSON.stringify(value)}`;

export function claimsOf(kind: ResourceKind, spec: KindSpecs[ResourceKind]): string[] {
  if (kind === 'partners') return (spec as KindSpecs['partners']).keys.map((key) => claim('partner-key', key.keyId));
  if (kind === 'issuers') return [claim('issuer', (spec as KindSpecs['issuers']).issuer)];
  return [];
}

/** The 409 for a claim the script found held by `holder` ("<kind>/<name>"), naming the field that clashes. */
export function clashOf(kind: ResourceKind, spec: KindSpecs[ResourceKind], taken: string, holder: string): A2AError {
  const owner = holder.slice(holder.indexOf('/') + 1);
  if (kind === 'partners') {
    const index = (spec as KindSpecs['partners']).keys.findIndex((key) => claim('partner-key', key.keyId) === taken);
    const keyId = (spec as KindSpecs['partners']).keys[index]?.keyId ?? '';
    return conflict(`keyId "${keyId}" is already partner ${owner}'s: key ids are unique across partners.`, `keys.${Math.max(index, 0)}.keyId`);
  }
  return conflict(`Issuer ${owner} already trusts "iss" ${(spec as KindSpecs['issuers']).issuer}: one issuer per "iss".`, 'issuer');
}

/**
 * Enters into the claims index the partners and issuers stored before it existed, so the write
 * script's check covers them too; each is entered only while it is still the version read here.
 * Run once when a process starts; cheap when every resource is indexed already.
 */
export async function adoptUnindexedClaims(store: ControlStore): Promise<void> {
  const [{ resources }, claimed] = await Promise.all([store.readAll(), store.claimedFields()]);
  const pending: { field: string; json: string; claims: string[] }[] = [];
  for (const { field, json } of resources) {
    if (claimed.has(field)) continue;
    let stored: StoredResource;
    try {
      stored = JSON.parse(json) as StoredResource;
    } catch {
      continue;
    }
    if (!isResourceKind(stored.kind)) continue;
    let claims: string[];
    try {
      claims = claimsOf(stored.kind, stored.spec);
    } catch {
      // Not the shape its kind stores (written by hand?): the view leaves it out as well.
      continue;
    }
    if (claims.length > 0) pending.push({ field, json, claims });
  }
  await store.adoptClaims(pending);
}
