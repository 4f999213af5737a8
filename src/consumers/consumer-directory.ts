// Which consumer a caller is, and the limits of its plan, read from this process's view of the
// control plane (rebuilt on every change, so a lookup is a few map reads). The gateway asks with
// the caller's principal, a worker with the task's owner: both are a tenant and a subject, so
// both come to the same answer. The most specific claim wins: an API key's `consumer`, then a
// consumer naming the caller's JWT subject, then one holding its whole tenant.
import { userSubject } from '../auth/principal.ts';
import { apiKeySubject } from '../control/api-keys.ts';
import type { ControlView } from '../control/control-view.ts';
import type { ConsumerSpec } from './consumer-spec.ts';

/** The gateway's limits a plan falls back to for what it leaves out (the top-level `limits`). */
export interface PlanDefaults {
  requestsPerSecond: number;
  burst: number;
  maxActiveTasks: number;
}

/** A plan with every limit decided (0 = no limit). */
export interface EffectivePlan {
  requestsPerSecond: number;
  burst: number;
  concurrentTasks: number;
  tasksPerDay: number;
  modelTokensPerDay: number;
  spendPerMonth: number;
}

export type PlanLimitName = Exclude<keyof EffectivePlan, 'burst'>;

export interface ResolvedConsumer {
  id: string;
  /** The plan's name as refusals say it. */
  plan: string;
  limits: EffectivePlan;
}

export function effectivePlan(spec: ConsumerSpec, defaults: PlanDefaults): EffectivePlan {
  const { plan } = spec;
  return {
    requestsPerSecond: plan.requestsPerSecond ?? defaults.requestsPerSecond,
    burst: plan.burst ?? defaults.burst,
    concurrentTasks: plan.concurrentTasks ?? defaults.maxActiveTasks,
    tasksPerDay: plan.tasksPerDay ?? 0,
    modelTokensPerDay: plan.modelTokensPerDay ?? 0,
    spendPerMonth: plan.spendPerMonth ?? 0,
  };
}

const ownerSlot = (tenant: string, subject: string): string => `${tenant}\u0000${subject}`;

export class ConsumerDirectory {
  private consumers = new Map<string, ResolvedConsumer>();
  private byKeyOwner = new Map<string, string>();
  private bySubject = new Map<string, string>();
  private byTenant = new Map<string, string>();

  constructor(
    view: ControlView,
    private readonly defaults: PlanDefaults,
    /** The configuration file's consumers (config `consumers`): in effect beside the stored ones. */
    private readonly configured: Readonly<Record<string, ConsumerSpec>> = {},
  ) {
    view.onChange((current) => this.rebuild(current));
  }

  /** The consumer the caller (tenant and principal subject) is, if any. */
  resolve(tenant: string, subject: string): ResolvedConsumer | undefined {
    const id = this.byKeyOwner.get(ownerSlot(tenant, subject)) ?? this.bySubject.get(subject) ?? this.byTenant.get(tenant);
    return id === undefined ? undefined : this.consumers.get(id);
  }

  get(id: string): ResolvedConsumer | undefined {
    return this.consumers.get(id);
  }

  /** The ids of every consumer defined, sorted. */
  ids(): string[] {
    return [...this.consumers.keys()].sort();
  }

  private rebuild(view: ControlView): void {
    const consumers = new Map<string, ResolvedConsumer>();
    const bySubject = new Map<string, string>();
    const byTenant = new Map<string, string>();
    // The configured ones first: the admin API refuses a stored one that clashes with them.
    const all = [...Object.entries(this.configured).map(([name, spec]) => ({ name, spec })), ...view.list('consumers')];
    for (const { name, spec } of all) {
      consumers.set(name, { id: name, plan: spec.plan.name ?? name, limits: effectivePlan(spec, this.defaults) });
      const { tenant, issuer, subjects } = spec.members;
      if (tenant !== undefined) byTenant.set(tenant, name);
      if (issuer !== undefined) for (const sub of subjects ?? []) bySubject.set(userSubject(issuer, sub), name);
    }
    const byKeyOwner = new Map<string, string>();
    // A key naming a consumer that does not exist (yet) counts as none: its caller falls to the others.
    for (const { spec } of view.list('api-keys')) {
      if (spec.consumer !== undefined && consumers.has(spec.consumer)) byKeyOwner.set(ownerSlot(spec.tenant, apiKeySubject(spec.owner)), spec.consumer);
    }
    this.consumers = consumers;
    this.byKeyOwner = byKeyOwner;
    this.bySubject = bySubject;
    this.byTenant = byTenant;
  }
}
