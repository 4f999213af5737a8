// Push notifications in the chaos run: webhook receivers run by the harness (the test receiver,
// in this process), some of them flaky (500, 429 with Retry-After, hanging past the gateway's
// timeout, now and then) and taken down for a while during the fault phase (port closed, then
// opened again on the same port). A seeded share of the transfers registers push configs: on
// SendMessage (configuration.taskPushNotificationConfig, every event of the task), with
// CreateTaskPushNotificationConfig once the id came back (the events after it), or both. What
// the receivers got is judged afterwards by push-report.ts. Every receiver answers after a short
// random delay, so deliveries are in flight when workers are killed.
import { setTimeout as sleep } from 'node:timers/promises';
import type { JWK } from 'jose';
import type { RedisClient } from '../src/redis/connection.ts';
import type { RedisKeys } from '../src/store/keys.ts';
import { startWebhookReceiver, type ReceivedDelivery, type ReceiverBehaviour, type WebhookReceiver } from '../test/support/webhook-receiver.ts';
import type { Random } from './random.ts';

/** The gateways' and workers' push settings in a chaos run: retries short enough that the run settles. */
export function chaosPushSettings(timeoutMs: number): Record<string, unknown> {
  return {
    allowedHosts: ['127.0.0.1'],
    timeoutMs,
    retryInitialDelayMs: 200,
    retryMaxDelayMs: 2_000,
    // Far longer than any outage of the run: in the shipped configuration nothing may be dead-lettered for want of time.
    retryHorizonMs: 600_000,
    breakerFailureThreshold: 5,
    breakerCooldownMs: 1_500,
    sweepIntervalMs: 500,
  };
}

/** How a flaky receiver misbehaves, per request; `rejectShare` applies to paths under /reject only. */
export interface Flakiness {
  serverErrorShare: number;
  tooManyShare: number;
  hangShare: number;
  /** A final refusal (400): the delivery is dead-lettered at once, visibly. */
  rejectShare: number;
  /**
   * Every receiver, flaky or not, takes this long (uniform in [min, max] ms) to answer: deliveries
   * stay in flight long enough for a killed worker to take some with it.
   */
  latencyMs: [number, number];
}

export const CHAOS_FLAKINESS: Flakiness = { serverErrorShare: 0.06, tooManyShare: 0.04, hangShare: 0.02, rejectShare: 0.1, latencyMs: [0, 150] };

export interface ChaosReceiver {
  name: string;
  flaky: boolean;
  /** Configs sent here with this Standard Webhooks secret as their token also get a v1 (HMAC) signature. */
  hmacSecret: string;
  receiver: WebhookReceiver;
}

/** One push config the run registered (or tried to). */
export interface PushRegistration {
  taskId: string;
  taskIndex: number;
  via: 'send' | 'create';
  receiver: string;
  /** Unique per registration: what a delivery's path says it was sent for. */
  path: string;
  url: string;
  /** Set for configs created with CreateTaskPushNotificationConfig (those on SendMessage get one derived from the messageId). */
  configId: string | undefined;
  /** What the receiver must see: the token header, an HMAC signature, or an Authorization header. */
  credentials: { kind: 'token'; token: string } | { kind: 'hmac' } | { kind: 'authorization'; header: string };
  /** The receiver may refuse some of its deliveries (400): those are dead-lettered. */
  rejects: boolean;
  /** Create only: the task's newest event id before the first attempt and after the one that succeeded. */
  startBounds: { before: string; after: string } | undefined;
  /** Create only: why it never succeeded. */
  failed: string | undefined;
}

export interface PushPlanEntry {
  receiver: number;
  send: boolean;
  create: boolean;
  credentials: 'token' | 'hmac' | 'authorization';
  rejects: boolean;
}

/** Which receiver(s) a transfer's configs go to, and how; undefined for a transfer without push. */
export function planPush(random: Random, share: number, receivers: readonly ChaosReceiver[]): PushPlanEntry | undefined {
  if (receivers.length === 0 || !random.chance(share)) return undefined;
  const receiver = random.int(0, receivers.length - 1);
  const how = random.next();
  const credentials = random.pick(['token', 'hmac', 'authorization'] as const);
  return {
    receiver,
    send: how < 0.75,
    create: how >= 0.45,
    credentials,
    rejects: receivers[receiver]?.flaky === true && random.chance(0.3),
  };
}

export class PushReceivers {
  readonly outages = { count: 0, downMs: 0 };
  /** Misbehaviour answered, by kind. */
  readonly misbehaviour: Record<string, number> = {};

  private constructor(
    readonly receivers: ChaosReceiver[],
    private readonly hangMs: number,
  ) {}

  /**
   * Starts `count` receivers on free ports, the first `flaky` of them misbehaving now and then.
   * `publicKeys`: the gateways' webhook key (v1a signatures are checked against it).
   */
  static async start(options: { count: number; flaky: number; publicKeys: JWK[]; random: Random; flakiness: Flakiness; gatewayTimeoutMs: number }): Promise<PushReceivers> {
    const receivers: ChaosReceiver[] = [];
    const hangMs = options.gatewayTimeoutMs + 500;
    let set: PushReceivers | undefined;
    for (let i = 0; i < options.count; i++) {
      const flaky = i < options.flaky;
      const random = options.random.fork(`receiver-${i}`);
      const hmacSecret = `whsec_${Buffer.from(`chaos-receiver-${i}-secret-32-bytes!`).toString('base64')}`;
      const decide = (path: string): ReceiverBehaviour | undefined => set?.decide(random, options.flakiness, path, flaky);
      const receiver = await startWebhookReceiver({ publicKeys: options.publicKeys, hmacSecret, decide });
      receivers.push({ name: `${flaky ? 'flaky' : 'steady'}-${i}`, flaky, hmacSecret, receiver });
    }
    set = new PushReceivers(receivers, hangMs);
    return set;
  }

  private decide(random: Random, flakiness: Flakiness, path: string, flaky: boolean): ReceiverBehaviour {
    const latency: ReceiverBehaviour = { delayMs: random.int(...flakiness.latencyMs) };
    if (!flaky) return latency;
    const roll = random.next();
    let behaviour: ReceiverBehaviour | undefined;
    let kind = '';
    let edge = flakiness.serverErrorShare;
    if (roll < edge) [kind, behaviour] = ['500', { status: 500 }];
    else if (roll < (edge += flakiness.tooManyShare)) [kind, behaviour] = ['429 Retry-After 1', { status: 429, retryAfterSeconds: 1 }];
    // A hang past the gateway's timeout, then a 503 the gateway no longer waits for (never an acceptance).
    else if (roll < (edge += flakiness.hangShare)) [kind, behaviour] = ['hang', { status: 503, delayMs: this.hangMs }];
    else if (path.startsWith('/reject') && roll < edge + flakiness.rejectShare) [kind, behaviour] = ['400', { status: 400 }];
    if (behaviour === undefined) return latency;
    this.misbehaviour[kind] = (this.misbehaviour[kind] ?? 0) + 1;
    return behaviour;
  }

  /** Every request each receiver recorded, by path. */
  deliveriesByPath(): Map<string, ReceivedDelivery[]> {
    const byPath = new Map<string, ReceivedDelivery[]>();
    for (const { receiver } of this.receivers) {
      for (const delivery of receiver.deliveries) {
        const list = byPath.get(delivery.path) ?? [];
        list.push(delivery);
        byPath.set(delivery.path, list);
      }
    }
    return byPath;
  }

  /**
   * While the fault phase lasts, takes a flaky receiver down now and then (its port closed for
   * [downMs]) and brings it back on the same port; every receiver is up when it returns.
   */
  async runOutages(shouldStop: () => boolean, random: Random, pauseMs: [number, number], downMs: [number, number], log: (line: string) => void): Promise<void> {
    const flaky = this.receivers.filter((r) => r.flaky);
    if (flaky.length === 0) return;
    while (!shouldStop()) {
      await sleep(random.int(...pauseMs));
      if (shouldStop()) break;
      const victim = random.pick(flaky);
      const forMs = random.int(...downMs);
      log(`fault: push receiver ${victim.name} down for ${forMs} ms`);
      await victim.receiver.down();
      this.outages.count += 1;
      this.outages.downMs += forMs;
      await sleep(forMs);
      await this.up(victim);
    }
  }

  private async up(target: ChaosReceiver): Promise<void> {
    // The port was ours a moment ago; another process taking it meanwhile would be a rare accident, retried.
    for (let attempt = 1; ; attempt++) {
      try {
        await target.receiver.up();
        return;
      } catch (error) {
        if (attempt >= 50) throw new Error(`push receiver ${target.name} could not listen on port ${target.receiver.port} again: ${(error as Error).message}`);
        await sleep(200);
      }
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.receivers.map((r) => r.receiver.close()));
  }
}

/** The taskPushNotificationConfig a plan puts on SendMessage, and its registration (task id still unknown). */
export function sendConfigOf(plan: PushPlanEntry, taskIndex: number, receivers: readonly ChaosReceiver[]): { config: Record<string, unknown>; registration: Omit<PushRegistration, 'taskId'> } {
  return configOf(plan, taskIndex, receivers, 'send', undefined);
}

function configOf(
  plan: PushPlanEntry,
  taskIndex: number,
  receivers: readonly ChaosReceiver[],
  via: 'send' | 'create',
  configId: string | undefined,
): { config: Record<string, unknown>; registration: Omit<PushRegistration, 'taskId'> } {
  const target = receivers[plan.receiver] as ChaosReceiver;
  const path = `${plan.rejects ? '/reject' : '/hook'}/t${taskIndex}/${via}`;
  const url = `${target.receiver.url}${path}`;
  const config: Record<string, unknown> = { url };
  if (configId !== undefined) config['id'] = configId;
  let credentials: PushRegistration['credentials'];
  if (plan.credentials === 'hmac') {
    config['token'] = target.hmacSecret;
    credentials = { kind: 'hmac' };
  } else if (plan.credentials === 'token') {
    const token = `tok-${taskIndex}-${via}`;
    config['token'] = token;
    credentials = { kind: 'token', token };
  } else {
    const secret = `cred-${taskIndex}-${via}`;
    config['authentication'] = { scheme: 'Bearer', credentials: secret };
    credentials = { kind: 'authorization', header: `Bearer ${secret}` };
  }
  return {
    config,
    registration: { taskIndex, via, receiver: target.name, path, url, configId, credentials, rejects: plan.rejects, startBounds: undefined, failed: undefined },
  };
}

async function newestEventId(redis: RedisClient, keys: RedisKeys, taskId: string): Promise<string> {
  const last = await redis.xrevrange(keys.task(taskId).events, '+', '-', 'COUNT', 1);
  return last[0]?.[0] ?? '0-0';
}

/**
 * CreateTaskPushNotificationConfig for a task whose id came back, through any live gateway,
 * re-sent (same config id: a replace, never a second config) until one answers. The task's
 * newest event before and after bound where the config's cursor started.
 */
export async function createConfigWithRetry(options: {
  plan: PushPlanEntry;
  taskIndex: number;
  taskId: string;
  receivers: readonly ChaosReceiver[];
  gateways: () => string[];
  random: Random;
  redis: RedisClient;
  keys: RedisKeys;
  onRetry: (cause: string) => void;
  timeoutMs?: number;
}): Promise<PushRegistration> {
  const { config, registration } = configOf(options.plan, options.taskIndex, options.receivers, 'create', `c-${options.taskIndex}`);
  const result: PushRegistration = { ...registration, taskId: options.taskId };
  const before = await newestEventId(options.redis, options.keys, options.taskId);
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (let request = 1; Date.now() < deadline; request++) {
    const live = options.gateways();
    if (live.length === 0) {
      options.onRetry('no gateway up');
      await sleep(200);
      continue;
    }
    const answer = await createOnce(options.random.pick(live), { taskId: options.taskId, ...config });
    if (answer.kind === 'ok') {
      result.startBounds = { before, after: await newestEventId(options.redis, options.keys, options.taskId) };
      return result;
    }
    if (answer.kind === 'refused') {
      result.failed = answer.answer;
      return result;
    }
    options.onRetry(`push config: ${answer.cause}`);
    await sleep(Math.min(2_000, 100 * request) + options.random.int(0, 100));
  }
  result.failed = 'no gateway answered before the deadline';
  return result;
}

async function createOnce(gateway: string, params: Record<string, unknown>): Promise<{ kind: 'ok' } | { kind: 'retry'; cause: string } | { kind: 'refused'; answer: string }> {
  let response: Response;
  let text: string;
  try {
    response = await fetch(`${gateway}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'CreateTaskPushNotificationConfig', params }),
      signal: AbortSignal.timeout(10_000),
    });
    text = await response.text();
  } catch (error) {
    return { kind: 'retry', cause: `transport ${(error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name}` };
  }
  if (response.status >= 500) return { kind: 'retry', cause: `HTTP ${response.status}` };
  try {
    const body = JSON.parse(text) as { result?: { id?: string }; error?: { code?: number } };
    if (typeof body.result?.id === 'string') return { kind: 'ok' };
    if (body.error?.code === -32603) return { kind: 'retry', cause: 'JSON-RPC -32603' };
  } catch {
    // reported below
  }
  return { kind: 'refused', answer: `HTTP ${response.status} ${text.slice(0, 300)}` };
}
