// A consumer's usage as the admin API answers it (GET /admin/v1/consumers/{id}/usage): its plan's
// limits as in effect, and what it used today and this month (UTC).
import type { UsageFigures } from '../store/consumers/consumer-store.ts';
import type { ConsumerPlans } from './consumer-plans.ts';
import type { EffectivePlan } from './consumer-directory.ts';

export interface ConsumerUsage {
  consumer: string;
  plan: string;
  /** The limits in effect, defaults filled in (0 = no limit). */
  limits: EffectivePlan;
  today: UsageFigures & { date: string };
  month: UsageFigures & { month: string };
}

/** The usage of consumer `id`, or undefined when this process's view has no such consumer. */
export async function readConsumerUsage(plans: ConsumerPlans, id: string): Promise<ConsumerUsage | undefined> {
  const consumer = plans.directory.get(id);
  if (consumer === undefined) return undefined;
  const { today, month } = await plans.store.usage(id);
  return { consumer: id, plan: consumer.plan, limits: consumer.limits, today, month };
}
