// A consumer's write made into the spec it stores, or refused: its schema, and no caller claimed
// by two consumers (a tenant or a JWT subject named by another), so whose a request is never
// depends on which consumer the process happened to look at first.
import { consumerInput, type ConsumerSpec } from '../consumers/consumer-spec.ts';
import { conflict, invalidBody, invalidField } from './admin-errors.ts';
import type { ControlView } from './control-view.ts';

/**
 * A consumer is the platform's: GET shows it with `tenant: ""`, so a body read back (admin
 * export, then apply) may say so; any other tenant is refused, naming the field (its callers'
 * tenant is `members.tenant`).
 */
function withoutTenant(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !('tenant' in body)) return body;
  const { tenant, ...rest } = body as Record<string, unknown>;
  if (tenant !== '') throw invalidField('tenant', 'must be left out (or ""): a consumer is the whole platform\'s; name the tenant of its callers in members.tenant');
  return rest;
}

export function consumerSpec(name: string, body: unknown, view: ControlView, configured: Readonly<Record<string, ConsumerSpec>>): ConsumerSpec {
  const parsed = consumerInput.safeParse(withoutTenant(body));
  if (!parsed.success) throw invalidBody(`Consumer "${name}"`, parsed.error);
  const spec = parsed.data;
  if (configured[name] !== undefined) throw conflict(`Consumer "${name}" is defined in the configuration file, which is read-only through the API: change it there.`);
  const others = [
    ...Object.entries(configured).map(([other, otherSpec]) => ({ name: other, spec: otherSpec })),
    ...view.list('consumers').filter((stored) => stored.name !== name),
  ];
  const { tenant, issuer, subjects } = spec.members;
  if (tenant !== undefined) {
    const same = others.find((other) => other.spec.members.tenant === tenant);
    if (same !== undefined) throw conflict(`Consumer "${same.name}" already holds tenant "${tenant}": a tenant belongs to one consumer.`, 'members.tenant');
  }
  if (issuer !== undefined && subjects !== undefined) {
    const mine = new Set(subjects);
    for (const other of others) {
      if (other.spec.members.issuer !== issuer) continue;
      const shared = other.spec.members.subjects?.find((subject) => mine.has(subject));
      if (shared !== undefined) throw conflict(`Subject "${shared}" of issuer "${issuer}" already belongs to consumer "${other.name}": a subject belongs to one consumer.`, 'members.subjects');
    }
  }
  return spec;
}
