// Whose a task is, and the key that names that owner in Redis.
/**
 * Whose a task is: a principal of a tenant, using one agent. Tasks, contexts, indexes,
 * idempotency keys, active-task caps and rate buckets are all per owner, so a task of one agent
 * is not found through another agent's URLs, and two agents never share a context.
 */
export interface Owner {
  /** The agent (name) the task belongs to. */
  agent: string;
  /** Tenant the owner belongs to ('' when tenants are not used). */
  tenant: string;
  /** Principal id within the tenant. */
  subject: string;
}

/** "<agent>/<tenant>/<subject>", each part URI-encoded (so it holds no "/" and no ":"). */
export const ownerKeyOf = (owner: Owner): string =>
  `${encodeURIComponent(owner.agent)}/${encodeURIComponent(owner.tenant)}/${encodeURIComponent(owner.subject)}`;

/** Owners read from keys lately: a turn reads its owner from its key several times on its path. */
const ownersByKey = new Map<string, Readonly<Owner>>();
/** Past this many, the remembered owners are forgotten at once (a bound, not an LRU: a miss costs a split). */
const OWNERS_REMEMBERED = 4096;

/** The owner a key was made from (ownerKeyOf's inverse); frozen, as it may be shared with other callers. */
export function ownerFromKey(ownerKey: string): Owner {
  let owner = ownersByKey.get(ownerKey);
  if (owner === undefined) {
    const [agent = '', tenant = '', subject = ''] = ownerKey.split('/');
    owner = Object.freeze({ agent: decodeURIComponent(agent), tenant: decodeURIComponent(tenant), subject: decodeURIComponent(subject) });
    if (ownersByKey.size >= OWNERS_REMEMBERED) ownersByKey.clear();
    ownersByKey.set(ownerKey, owner);
  }
  return owner;
}

/** The tenant part of an owner key (`<agent>/<tenant>`, each part URI-encoded): one agent's tenant, whose turns share a fair share. */
export function tenantKeyOf(ownerKey: string): string {
  const cut = ownerKey.lastIndexOf('/');
  return cut < 0 ? ownerKey : ownerKey.slice(0, cut);
}
