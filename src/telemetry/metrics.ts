// This process's Prometheus metrics (prom-client): one registry per process, instruments
// defined once here, updated where the facts are known. Updating one is an in-memory increment:
// nothing on the request or turn path talks to Redis for metrics. Gauges that are Redis-wide
// (queue depths) are read at scrape time by the gateway, from sources the roles register.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { onLimitRefusal } from '../limits/limit-refusal.ts';

export const metricsRegistry = new Registry();

let defaultsStarted = false;
/** Process metrics (CPU, memory, event-loop lag as nodejs_eventloop_lag_*), started with the first role. */
export function startProcessMetrics(): void {
  if (defaultsStarted) return;
  defaultsStarted = true;
  collectDefaultMetrics({ register: metricsRegistry, eventLoopMonitoringPrecision: 20 });
}

const LATENCY_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
const REDIS_BUCKETS_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

export const requestsTotal = new Counter({
  name: 'a2a_requests_total',
  help: 'A2A requests answered, by operation, binding and HTTP status (binding mcp: requests to /mcp, by MCP method).',
  labelNames: ['method', 'binding', 'status'] as const,
  registers: [metricsRegistry],
});

export const requestDuration = new Histogram({
  name: 'a2a_request_duration_seconds',
  help: 'Time from a request arriving to its response ending (a stream: to its close), by operation and binding.',
  labelNames: ['method', 'binding'] as const,
  buckets: LATENCY_BUCKETS_SECONDS,
  registers: [metricsRegistry],
});

export const mcpToolCalls = new Counter({
  name: 'a2a_mcp_tool_calls_total',
  help: 'MCP tools/call requests answered by this gateway, by outcome: the task state the call answered with (completed, input_required, failed, canceled, working past mcp.maxWaitMs, …), task (answered with an MCP task), message (a direct reply), refused, abandoned (the client went away).',
  labelNames: ['outcome'] as const,
  registers: [metricsRegistry],
});

export const timeToFirstEvent = new Histogram({
  name: 'a2a_time_to_first_event_seconds',
  help: 'Time from a streaming request arriving to its first task event being written, by operation.',
  labelNames: ['method'] as const,
  buckets: LATENCY_BUCKETS_SECONDS,
  registers: [metricsRegistry],
});

export const tasksCreated = new Counter({
  name: 'a2a_tasks_created_total',
  help: 'Tasks created by this gateway (TASK_STATE_SUBMITTED), by agent.',
  labelNames: ['agent'] as const,
  registers: [metricsRegistry],
});

export const turnsFinished = new Counter({
  name: 'a2a_turns_finished_total',
  help: 'Turns this worker finished, by agent and the state they left the task in (TASK_STATE_COMPLETED, TASK_STATE_CANCELED, …).',
  labelNames: ['agent', 'state'] as const,
  registers: [metricsRegistry],
});

export const turnDuration = new Histogram({
  name: 'a2a_turn_duration_seconds',
  help: 'Time a turn ran on this worker, from taking the lease to storing its outcome, by agent and final state.',
  labelNames: ['agent', 'state'] as const,
  buckets: LATENCY_BUCKETS_SECONDS,
  registers: [metricsRegistry],
});

export const queueWait = new Histogram({
  name: 'a2a_queue_wait_seconds',
  help: 'Time a turn waited before a worker took it (a job in its queue; a turn started where it was accepted, in line for a place), by agent.',
  labelNames: ['agent'] as const,
  buckets: LATENCY_BUCKETS_SECONDS,
  registers: [metricsRegistry],
});

export const leaseTakeovers = new Counter({
  name: 'a2a_lease_takeovers_total',
  help: 'Turns this worker took over from a lost run (another worker died or its lease lapsed), by agent.',
  labelNames: ['agent'] as const,
  registers: [metricsRegistry],
});

export const cancelStages = new Counter({
  name: 'a2a_cancel_stages_total',
  help: 'Cancellation stages reached: requested (gateway), acknowledged and stopped (worker).',
  labelNames: ['stage'] as const,
  registers: [metricsRegistry],
});

export const pushDeliveries = new Counter({
  name: 'a2a_push_deliveries_total',
  help: 'Webhook delivery attempts by outcome (delivered, retry, gone, failed).',
  labelNames: ['outcome'] as const,
  registers: [metricsRegistry],
});

export const pushDeadLetters = new Counter({
  name: 'a2a_push_dead_letters_total',
  help: 'Webhook deliveries given up and dead-lettered.',
  registers: [metricsRegistry],
});

export const limitRefusals = new Counter({
  name: 'a2a_limit_refusals_total',
  help: 'Requests and connections refused by a limit, by the setting that decided it (limits.requestsPerSecond, limits.maxActiveTasks, maxBodyBytes, …).',
  labelNames: ['limit'] as const,
  registers: [metricsRegistry],
});

export const replayedEvents = new Histogram({
  name: 'a2a_replay_events',
  help: 'Events a stream read from the replay buffer when it opened or resumed (Last-Event-ID).',
  buckets: [0, 1, 2, 5, 10, 25, 50, 100, 250, 1000],
  registers: [metricsRegistry],
});

export const redisRoundTrip = new Histogram({
  name: 'a2a_redis_roundtrip_seconds',
  help: 'Redis PING round trips measured every 30 seconds on this process\'s command connection.',
  labelNames: ['role'] as const,
  buckets: REDIS_BUCKETS_SECONDS,
  registers: [metricsRegistry],
});

// Every refusal by a limit passes through noteLimitRefusal (src/limits/limit-refusal.ts), which
// names the setting that decided it: that name is the label.
onLimitRefusal((limit) => limitRefusals.inc({ limit }));

/** A gauge read at scrape time: each registered source adds its values (e.g. one gateway's open streams). */
export class SourcedGauge<Label extends string> {
  private readonly sources = new Set<() => Promise<{ labels: Partial<Record<Label, string>>; value: number }[]>>();

  constructor(name: string, help: string, labelNames: readonly Label[]) {
    const sources = this.sources;
    new Gauge({
      name,
      help,
      labelNames,
      registers: [metricsRegistry],
      async collect() {
        this.reset();
        const totals = new Map<string, { labels: Partial<Record<Label, string>>; value: number }>();
        const readings = await Promise.all([...sources].map((read) => read().catch(() => [])));
        for (const reading of readings.flat()) {
          const key = JSON.stringify(reading.labels);
          const total = totals.get(key);
          if (total === undefined) totals.set(key, { labels: reading.labels, value: reading.value });
          else total.value += reading.value;
        }
        for (const { labels, value } of totals.values()) this.set(labels, value);
      },
    });
  }

  /** Adds a source; the returned function removes it (when its role closes). */
  register(read: () => Promise<{ labels: Partial<Record<Label, string>>; value: number }[]>): () => void {
    this.sources.add(read);
    return () => this.sources.delete(read);
  }
}

export const queueJobs = new SourcedGauge('a2a_queue_jobs', 'Jobs in each BullMQ queue by state (waiting, prioritized, delayed, active, failed), read from Redis at scrape time by the gateway.', ['queue', 'state'] as const);
export const activeTurns = new SourcedGauge('a2a_active_turns', 'Turns running in this worker process now, by agent.', ['agent'] as const);
export const openStreams = new SourcedGauge('a2a_sse_streams_open', 'SSE streams this gateway process holds open now.', [] as const);
