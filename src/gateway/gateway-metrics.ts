// The gateway's metrics: RedisClient-wide queue depths are read at scrape time (every gateway
// reports the same Redis, so a dashboard takes max() over gateways, not sum()); the rest is
// this process's own.
import type { Queue } from 'bullmq';
import type { Lifecycle } from '../app/lifecycle.ts';
import type { SseStreams } from '../bindings/sse/sse-writer.ts';
import type { RedisClient } from '../redis/connection.ts';
import { openStreams, queueJobs, startProcessMetrics } from '../telemetry/metrics.ts';
import { probeRedisRoundTrips } from '../telemetry/redis-probe.ts';

export function registerGatewayMetrics(lifecycle: Lifecycle, sources: { commands: RedisClient; streams: SseStreams; dashboardQueues: { list(): readonly Queue[] } }): void {
  startProcessMetrics();
  const unregister = [
    openStreams.register(async () => [{ labels: {}, value: sources.streams.size }]),
    queueJobs.register(() => readQueueDepths(sources.dashboardQueues.list())),
    probeRedisRoundTrips(sources.commands, 'gateway'),
  ];
  lifecycle.register({
    name: 'gateway metrics',
    stop: () => {
      for (const collector of unregister) collector();
    },
  });
}

const QUEUE_STATES = ['waiting', 'prioritized', 'delayed', 'active', 'failed'] as const;

/** Each queue's job counts by state (one Redis call per queue), for a2a_queue_jobs. */
async function readQueueDepths(queues: readonly Queue[]): Promise<{ labels: { queue: string; state: string }; value: number }[]> {
  const counts = await Promise.all(queues.map(async (queue) => ({ queue: queue.name, counts: await queue.getJobCounts(...QUEUE_STATES) })));
  return counts.flatMap(({ queue, counts: byState }) => QUEUE_STATES.map((state) => ({ labels: { queue, state }, value: byState[state] ?? 0 })));
}
