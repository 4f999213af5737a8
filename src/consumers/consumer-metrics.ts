// Consumers' usage in /metrics, read from Redis at scrape time: a2a_consumer_usage by consumer,
// period (today, month) and measure. Its label values are bounded: only consumers defined in the
// control plane, at most MAX_METRIC_CONSUMERS of them (by id), whatever callers send. Every
// gateway reads the same counters, so one reader per process answers (a dashboard takes max()
// over gateways, as for the queue depths).
import { Gauge } from 'prom-client';
import { metricsRegistry } from '../telemetry/metrics.ts';
import type { ConsumerPlans } from './consumer-plans.ts';

/** Consumers reported at most; more are left out of /metrics (their usage stays on the admin API). */
export const MAX_METRIC_CONSUMERS = 100;

const MEASURES = [
  ['requests', 'requests'],
  ['tasks', 'tasks'],
  ['tokensIn', 'tokens_in'],
  ['tokensOut', 'tokens_out'],
  ['spend', 'spend'],
] as const;

const readers: ConsumerPlans[] = [];

new Gauge({
  name: 'a2a_consumer_usage',
  help: `What each consumer used today and this month (UTC), by measure (requests, tasks, tokens_in, tokens_out, spend); the first ${MAX_METRIC_CONSUMERS} consumers by id.`,
  labelNames: ['consumer', 'period', 'measure'] as const,
  registers: [metricsRegistry],
  async collect() {
    this.reset();
    const plans = readers[0];
    if (plans === undefined) return;
    const ids = plans.directory.ids().slice(0, MAX_METRIC_CONSUMERS);
    const usages = await Promise.all(ids.map(async (id) => ({ id, usage: await plans.store.usage(id) })));
    for (const { id, usage } of usages) {
      for (const [period, figures] of [['today', usage.today], ['month', usage.month]] as const) {
        for (const [field, measure] of MEASURES) this.set({ consumer: id, period, measure }, figures[field]);
      }
    }
  },
});

/** Reports `plans`' consumers in /metrics until the returned function is called. */
export function reportConsumerUsage(plans: ConsumerPlans): () => void {
  readers.push(plans);
  return () => {
    const at = readers.indexOf(plans);
    if (at >= 0) readers.splice(at, 1);
  };
}
