// Push delivery in a worker process: the outbox (fast path on live events, sweeper for what it
// misses), the delivery queue's worker, the receiver policy and the signing key. Its Redis
// connections are fixed: commands, one subscriber, the BullMQ worker's.
import type { Queue, Worker } from 'bullmq';
import { createPushQueue, createPushWorker, type PushJobData } from '../../queues/push.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { Lifecycle } from '../app/lifecycle.ts';
import type { Logger } from '../logging/logger.ts';
import { isCluster, openRedis, whenReady } from '../redis/connection.ts';
import { taskChannels } from '../store/channels.ts';
import { PushDelivery } from './delivery.ts';
import { PushOutbox } from './outbox.ts';
import { PushStore } from '../store/push/push-store.ts';
import { SubscriptionStore } from '../store/push/subscription-store.ts';
import { ReceiverPolicy, type PushResolver } from './receiver-policy.ts';
import { loadPushSigningKeys, previousKeysSignUntil } from './signing-key.ts';
import { WebhookSender } from './webhook-sender.ts';
import { WebhookSigner } from './webhook-signature.ts';

export interface PushRole {
  outbox: PushOutbox;
  store: PushStore;
  queue: Queue<PushJobData>;
}

export interface PushRoleOptions {
  baseDir: string;
  /** How receiver host names are resolved (tests inject one to prove DNS rebinding is caught). */
  resolve?: PushResolver;
}

/** Starts webhook delivery; what it starts is registered with the lifecycle, which stops it. */
export async function startPushRole(lifecycle: Lifecycle, config: GatewayConfig, logger: Logger, options: PushRoleOptions): Promise<PushRole> {
  const settings = config.push;
  const signingKeys = await loadPushSigningKeys(config, options.baseDir);
  const commands = openRedis(config, 'commands');
  const subscriber = openRedis(config, 'events');
  const workerConnection = openRedis(config, 'worker');
  for (const [role, connection] of [['push commands', commands], ['push events', subscriber], ['push worker', workerConnection]] as const) {
    connection.on('error', (error: Error) => logger.warn('Redis connection error; reconnecting', { role, error: error.message }));
  }
  lifecycle.register({
    name: 'push Redis connections',
    async stop() {
      subscriber.disconnect();
      workerConnection.disconnect();
      await commands.quit().catch(() => undefined);
    },
  });
  const store = new PushStore(commands, config.keyPrefix);
  const previousUntilMs = await previousKeysSignUntil(store, signingKeys, settings.signingKeyOverlapSeconds);
  if (previousUntilMs > Date.now()) {
    logger.info('webhook signing key rotation: the previous keys sign beside the current one until the overlap ends', {
      until: new Date(previousUntilMs).toISOString(),
      previousKeys: signingKeys.previous.map((key) => key.kid ?? ''),
    });
  }
  const signer = new WebhookSigner(signingKeys.current, { keys: signingKeys.previous, untilMs: previousUntilMs });
  const sender = new WebhookSender(new ReceiverPolicy({ allowedHosts: settings.allowedHosts, maxUrlLength: settings.maxUrlLength, resolve: options.resolve }), settings.timeoutMs);
  lifecycle.register({ name: 'webhook sender', stop: () => sender.close() });
  const queue = createPushQueue(commands, config.keyPrefix);
  queue.on('error', (error: Error) => logger.debug('push queue error', { error: error.message }));
  lifecycle.register({ name: 'push queue', stop: () => queue.close().catch(() => undefined) });
  const outbox = new PushOutbox(store, queue, logger, settings.sweepIntervalMs);
  const delivery = new PushDelivery({
    store,
    outbox,
    sender,
    signer,
    logger,
    retry: { initialDelayMs: settings.retryInitialDelayMs, maxDelayMs: settings.retryMaxDelayMs, horizonMs: settings.retryHorizonMs },
    breaker: { threshold: settings.breakerFailureThreshold, cooldownMs: settings.breakerCooldownMs, probeMs: settings.timeoutMs + 1_000 },
    maxDeadLetters: settings.maxDeadLetters,
    subscriptions: new SubscriptionStore(commands, config.keyPrefix),
  });
  const worker: Worker<PushJobData> = createPushWorker({
    connection: workerConnection,
    keyPrefix: config.keyPrefix,
    concurrency: settings.concurrency,
    // A send may take the whole timeout; the lock must outlast it, and the stall check need
    // not run much more often than a lock can expire.
    lockDurationMs: Math.max(config.lockDurationMs, settings.timeoutMs * 2),
    stalledIntervalMs: Math.max(config.stalledIntervalMs, Math.floor(Math.max(config.lockDurationMs, settings.timeoutMs * 2) / 2)),
    backoffStrategy: delivery.backoffStrategy,
    process: (job, token) => delivery.process(job, token),
  });
  worker.on('error', (error) => logger.warn('push worker error', { error: error.message }));
  lifecycle.register({ name: 'push worker', stop: () => worker.close() });

  const taskKeys = taskChannels(config.keyPrefix);
  const attached = store.attachedChannel();
  // A message is "<event id>\n<StreamResponse JSON>", or the id alone for a large event (include/appendEvent.lua);
  // only a task's creation event is a `task` snapshot, and it is never announced by id. Read as
  // bytes: every event of every task comes here, and only its channel and first bytes matter.
  subscriber.on('pmessageBuffer', (_pattern: string, channel: Buffer, message: Buffer) => {
    const taskId = taskKeys.taskOfEventChannel(channel.toString());
    if (taskId !== undefined) outbox.notify(taskId, false, isCreationMessage(message));
  });
  subscriber.on('message', (channel: string, taskId: string) => {
    if (channel === attached) outbox.notify(taskId, true);
  });
  let connectedOnce = false;
  subscriber.on('ready', () => {
    // Events published while the subscriber was away are lost: sweep now rather than at the next interval.
    if (connectedOnce) outbox.sweepOnce().catch(() => undefined);
    connectedOnce = true;
  });
  await whenReady(subscriber);
  // A Cluster's events are SPUBLISHed per task: no pattern hears them all. There the outbox
  // learns of new events from its sweep (push.sweepIntervalMs) and of new configs at once.
  if (!isCluster(subscriber)) await subscriber.psubscribe(taskKeys.eventChannelPattern());
  await subscriber.subscribe(attached);
  await worker.waitUntilReady();
  await lifecycle.start({ name: 'push outbox', start: () => outbox.start(), stop: () => outbox.close() });
  return { outbox, store, queue };
}

const CREATION_JSON_START = Buffer.from('{"task":');

/** Whether an event message (`<id>\n<JSON>`) carries a task's creation event: its JSON starts as a Task snapshot. */
function isCreationMessage(message: Buffer): boolean {
  const start = message.indexOf(0x0a) + 1;
  return start > 0 && start + CREATION_JSON_START.length <= message.length && message.compare(CREATION_JSON_START, 0, CREATION_JSON_START.length, start, start + CREATION_JSON_START.length) === 0;
}
