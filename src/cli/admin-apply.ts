// `a2a-gateway admin export` and `admin apply [--dry-run]`: the control plane's resources as one
// JSON document ({ "partners": [...], "issuers": [...], "api-keys": [...] }, each entry its
// name and spec), and a document like it applied as the desired state. A stored resource is
// unchanged when every field the document gives equals the stored one (fields it leaves out
// keep their defaults); otherwise it is replaced with If-Match on the version just read, so a
// change made meanwhile by someone else fails instead of being overwritten. Configured
// resources (source "config") are the configuration file's: shown, never written. With
// --prune, stored resources the document does not name are deleted.
import { RESOURCE_KINDS, type ResourceKind } from '../control/resource-kinds.ts';
import { adminRequest, listAll, type AdminTarget } from './admin-client.ts';

export type ResourceDocument = Partial<Record<ResourceKind, Record<string, unknown>[]>>;

/** What the resource's spec is, without what the control plane adds. */
const METADATA = new Set(['name', 'version', 'source', 'updatedAt', 'updatedBy', 'key']);
const specOf = (resource: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(Object.entries(resource).filter(([field]) => !METADATA.has(field)));

export async function exportResources(target: AdminTarget): Promise<ResourceDocument> {
  const document: ResourceDocument = {};
  for (const kind of RESOURCE_KINDS) {
    const items = await listAll(target, `/${kind}`).catch((error: Error) => {
      // A tenant admin may not read issuers: the export is then of what it may read.
      if (/^GET \S+: 403/.test(error.message)) return undefined;
      throw error;
    });
    if (items !== undefined) document[kind] = items.filter((item) => item.source === 'store').map((item) => ({ name: item.name, ...specOf(item) }));
  }
  return document;
}

export interface PlannedChange {
  action: 'create' | 'replace' | 'delete' | 'unchanged' | 'configured';
  kind: ResourceKind;
  name: string;
  /** The version a replace or delete expects. */
  version?: number;
  spec?: Record<string, unknown>;
}

function covers(current: unknown, desired: unknown): boolean {
  if (desired === null || typeof desired !== 'object') return current === desired;
  if (Array.isArray(desired)) return Array.isArray(current) && current.length === desired.length && desired.every((value, index) => covers(current[index], value));
  if (current === null || typeof current !== 'object' || Array.isArray(current)) return false;
  return Object.entries(desired).every(([field, value]) => covers((current as Record<string, unknown>)[field], value));
}

/** The changes that make the stored resources what `document` says. */
export async function planApply(target: AdminTarget, document: ResourceDocument, prune: boolean): Promise<PlannedChange[]> {
  const plan: PlannedChange[] = [];
  for (const kind of RESOURCE_KINDS) {
    const desired = document[kind];
    if (desired === undefined) continue;
    const current = new Map((await listAll(target, `/${kind}`)).map((item) => [String(item.name), item]));
    const named = new Set<string>();
    for (const entry of desired) {
      const name = String(entry.name ?? entry.id ?? '');
      if (name === '') throw new Error(`a ${kind} entry has no "name": ${JSON.stringify(entry).slice(0, 200)}`);
      named.add(name);
      const spec = specOf(entry);
      const stored = current.get(name);
      if (stored === undefined) plan.push({ action: 'create', kind, name, spec });
      else if (stored.source === 'config') plan.push({ action: 'configured', kind, name });
      else plan.push({ action: covers(specOf(stored), spec) ? 'unchanged' : 'replace', kind, name, version: Number(stored.version), spec });
    }
    if (!prune) continue;
    for (const [name, stored] of current) {
      if (!named.has(name) && stored.source === 'store') plan.push({ action: 'delete', kind, name, version: Number(stored.version) });
    }
  }
  return plan;
}

/** Carries out a plan, in order; returns the keys of API keys it created (shown once). */
export async function carryOut(target: AdminTarget, plan: readonly PlannedChange[]): Promise<{ name: string; key: string }[]> {
  const keys: { name: string; key: string }[] = [];
  for (const change of plan) {
    const path = `/${change.kind}/${encodeURIComponent(change.name)}`;
    if (change.action === 'create' || change.action === 'replace') {
      const headers: Record<string, string> = change.action === 'create' ? { 'If-None-Match': '*' } : { 'If-Match': `"${change.version ?? 0}"` };
      const answer = await adminRequest(target, 'PUT', path, { body: change.spec, headers });
      const key = (answer.body as { key?: string }).key;
      if (key !== undefined) keys.push({ name: change.name, key });
    } else if (change.action === 'delete') {
      await adminRequest(target, 'DELETE', path, { headers: { 'If-Match': `"${change.version ?? 0}"` } });
    }
  }
  return keys;
}

export const describeChange = (change: PlannedChange): string =>
  `${change.action.padEnd(10)} ${change.kind}/${change.name}${change.version === undefined ? '' : ` (version ${change.version})`}${change.action === 'configured' ? ': from the configuration file, left as it is' : ''}`;
