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

/** The owner a key was made from (ownerKeyOf's inverse). */
export function ownerFromKey(ownerKey: string): Owner {
  const [agent = '', tenant = '', subject = ''] = ownerKey.split('/');
  return { agent: decodeURIComponent(agent), tenant: decodeURIComponent(tenant), subject: decodeURIComponent(subject) };
}

/** The tenant part of an owner key (`<agent>/<tenant>`, each part URI-encoded): one agent's tenant, whose turns share a fair share. */
export function tenantKeyOf(ownerKey: string): string {
  const cut = ownerKey.lastIndexOf('/');
  return cut < 0 ? ownerKey : ownerKey.slice(0, cut);
}
