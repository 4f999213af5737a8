// Sends one delivery job: checks the config and its cursor (a settled or deleted delivery sends
// nothing), asks the receiver's circuit breaker, signs, sends, and settles the outcome:
// delivered → the cursor moves on and the next event starts; 410 → the config is disabled;
// another 4xx, a redirect or a blocked address → dead letter at once; a network error, timeout,
// 5xx, 408 or 429 → retried with backoff (or after Retry-After) until the retry horizon, then
// dead letter. A worker killed mid-send leaves the job to BullMQ's stall check: the delivery is
// sent again under the same webhook-id, which receivers dedup on.
import { DelayedError, type Job } from 'bullmq';
import { deliveryIdOf, type PushJobData } from '../../queues/push.ts';
import type { Logger } from '../logging/logger.ts';
import { logFailure, originOf } from '../logging/operator-failures.ts';
import { GATEWAY_VERSION } from '../version.ts';
import type { PushOutbox } from './outbox.ts';
import type { StoredPushConfig } from './push-config.ts';
import type { DeadLetter, PushStore } from '../store/push/push-store.ts';
import { backoffDelayMs, RetryDeliveryError, type RetrySettings } from './retry-policy.ts';
import type { WebhookSender } from './webhook-sender.ts';
import { isHmacSecret, type WebhookSigner } from './webhook-signature.ts';
import { pushDeadLetters, pushDeliveries } from '../telemetry/metrics.ts';
import { A2A, activeContext, inSpan, markError, SpanKind, traceHeaders } from '../telemetry/spans.ts';
import { ownerFromKey } from '../store/owner.ts';
import type { SubscriptionStore } from '../store/push/subscription-store.ts';
import { withSubscriptionNote } from './subscription-configs.ts';

/** Header carrying a config's `token` (the name the official SDKs use). */
export const NOTIFICATION_TOKEN_HEADER = 'X-A2A-Notification-Token';
/** Push payloads are StreamResponse objects (spec 4.3.3). */
export const PUSH_CONTENT_TYPE = 'application/a2a+json';

export interface PushDeliveryOptions {
  store: PushStore;
  outbox: PushOutbox;
  sender: WebhookSender;
  signer: WebhookSigner;
  logger: Logger;
  retry: RetrySettings;
  breaker: { threshold: number; cooldownMs: number; probeMs: number };
  maxDeadLetters: number;
  /** The owners' subscriptions: a delivery of a deleted one sends nothing and drops its config. */
  subscriptions?: SubscriptionStore;
}

export function webhookHeaders(config: StoredPushConfig, deliveryId: string, body: string, signer: WebhookSigner): Record<string, string> {
  const headers: Record<string, string> = {
    'Content-Type': PUSH_CONTENT_TYPE,
    'User-Agent': `a2a-gateway/${GATEWAY_VERSION}`,
    ...signer.headers(deliveryId, body, isHmacSecret(config.token) ? config.token : undefined),
  };
  if (config.authentication?.credentials !== undefined) headers.Authorization = `${config.authentication.scheme} ${config.authentication.credentials}`;
  // A signing secret signs; it is never sent.
  if (config.token !== undefined && !isHmacSecret(config.token)) headers[NOTIFICATION_TOKEN_HEADER] = config.token;
  return headers;
}

/** How long a receiver seen healthy (closed circuit, no failures) is trusted without asking Redis again. */
const HEALTHY_RECEIVER_CACHE_MS = 1_000;

export class PushDelivery {
  /** Receivers (origins) whose circuit was closed with no failures, until the given time. */
  private readonly healthy = new Map<string, number>();

  constructor(private readonly options: PushDeliveryOptions) {}

  /**
   * The receiver's circuit breaker, with the common case (a healthy receiver) answered from a
   * short local cache: another worker's failures are seen within HEALTHY_RECEIVER_CACHE_MS.
   */
  private async admit(origin: string): Promise<{ allow: boolean; untilMs: number | undefined; failures: number }> {
    const until = this.healthy.get(origin);
    if (until !== undefined && until > Date.now()) return { allow: true, untilMs: undefined, failures: 0 };
    const admitted = await this.options.store.breaker(origin, 'admit', this.options.breaker);
    if (admitted.allow && admitted.failures === 0) {
      if (this.healthy.size > 10_000) this.healthy.clear();
      this.healthy.set(origin, Date.now() + HEALTHY_RECEIVER_CACHE_MS);
    } else this.healthy.delete(origin);
    return admitted;
  }

  /** The queue's backoff strategy: the delay the processor chose for this retry. */
  readonly backoffStrategy = (attemptsMade: number, _type?: string, error?: Error): number =>
    error instanceof RetryDeliveryError ? error.delayMs : backoffDelayMs(attemptsMade, this.options.retry);

  async process(job: Job<PushJobData>, token?: string): Promise<void> {
    const data = job.data;
    const { store } = this.options;
    const deliveryId = deliveryIdOf(data.taskId, data.configId, data.eventId);
    const state = await store.deliveryState(data.taskId, data.configId);
    const replay = data.replay !== undefined;
    if (!replay && (state.config === undefined || state.config.disabled !== undefined || state.inflightEventId !== data.eventId)) {
      return; // deleted, disabled, or settled already (a repeated job): nothing to send
    }
    if (state.config === undefined) {
      await this.deadLetter(job, deliveryId, undefined, { error: 'the push config was deleted before the replay could be sent' });
      return;
    }
    const config = state.config;
    if (config.subscription !== undefined && !replay && this.options.subscriptions !== undefined) {
      const { id, ownerKey } = config.subscription;
      if (!(await this.options.subscriptions.exists(ownerKey, id))) {
        // Deleted since it was put on the task: the task stops sending to it.
        await store.deleteConfig(ownerKey, data.taskId, data.configId);
        return;
      }
    }
    if (data.eventJson === '') {
      await this.fail(job, deliveryId, config, { error: 'the event is no longer in the task\'s replay buffer (expired or trimmed)' });
      return;
    }
    const url = new URL(config.url);
    const admitted = await this.admit(url.origin);
    if (!admitted.allow) {
      const until = admitted.untilMs ?? Date.now() + this.options.breaker.cooldownMs;
      if (until > job.timestamp + this.options.retry.horizonMs) {
        await this.fail(job, deliveryId, config, { error: `the receiver's circuit is open (it failed ${this.options.breaker.threshold} times in a row) past the retry horizon` });
        return;
      }
      // Waiting for the circuit costs no attempt: nothing was sent.
      await job.moveToDelayed(until + Math.floor(Math.random() * 250), token);
      throw new DelayedError();
    }
    const outcome = await inSpan(
      'POST',
      { kind: SpanKind.CLIENT, attributes: { 'http.request.method': 'POST', 'url.full': config.url, [A2A.taskId]: data.taskId, [A2A.pushConfigId]: data.configId }, parent: activeContext() },
      async (span, own) => {
        const body = config.subscription === undefined ? data.eventJson : withSubscriptionNote(data.eventJson, config.subscription.id, data.taskId);
        const headers = webhookHeaders(config, deliveryId, body, this.options.signer);
        // The receiver may join the trace; the signature covers the body and webhook-* headers only.
        Object.assign(headers, traceHeaders(own));
        const sent = await this.options.sender.send({ url, headers, body });
        if (sent.status !== undefined) span?.setAttribute('http.response.status_code', sent.status);
        if (sent.kind !== 'delivered') markError(span, new Error(sent.error), sent.kind);
        return sent;
      },
    );
    pushDeliveries.inc({ outcome: outcome.kind });
    switch (outcome.kind) {
      case 'delivered':
        if (admitted.failures > 0) await store.breaker(url.origin, 'success', this.options.breaker);
        if (replay) await store.removeDeadLetter(data.taskId, deliveryId);
        else await this.settleAndContinue(data, 'delivered');
        return;
      case 'gone': {
        if (admitted.failures > 0) await store.breaker(url.origin, 'success', this.options.breaker);
        if (!replay) {
          await store.settle(data.taskId, data.configId, data.eventId, 'gone', { atMs: Date.now(), status: outcome.status, reason: outcome.error, deliveryId });
        }
        await this.deadLetter(job, deliveryId, config, { error: `${outcome.error}: the config is disabled, nothing more is sent to it (create it again to resume)`, status: outcome.status, configDisabled: true });
        // The dead-letter line above is the operator's (configDisabled: true); this one is detail.
        this.options.logger.info('push receiver answered 410; config disabled', { taskId: data.taskId, configId: data.configId });
        return;
      }
      case 'failed':
        // The receiver answered (or may not be reached at all): its circuit is not at fault.
        if (outcome.status !== undefined && admitted.failures > 0) await store.breaker(url.origin, 'success', this.options.breaker);
        await this.fail(job, deliveryId, config, outcome);
        return;
      case 'retry': {
        this.healthy.delete(url.origin);
        await store.breaker(url.origin, 'failure', this.options.breaker);
        const delay = outcome.retryAfterMs ?? backoffDelayMs(job.attemptsMade + 1, this.options.retry);
        if (Date.now() + delay > job.timestamp + this.options.retry.horizonMs) {
          await this.fail(job, deliveryId, config, { ...outcome, error: `${outcome.error}; retried until the retry horizon (${this.options.retry.horizonMs} ms)` });
          return;
        }
        throw new RetryDeliveryError(`${outcome.error}; next try in ${delay} ms`, delay);
      }
    }
  }

  /** Settles the delivery and starts the config's next one (the chain moves on). */
  private async settleAndContinue(data: PushJobData, outcome: 'delivered' | 'dead'): Promise<void> {
    const next = await this.options.store.settle(data.taskId, data.configId, data.eventId, outcome);
    if (next !== undefined) await this.options.outbox.addJob(data.taskId, next);
  }

  /** A delivery that will not be retried: dead letter, then the config's chain moves on. */
  private async fail(job: Job<PushJobData>, deliveryId: string, config: StoredPushConfig, failure: { error: string; status?: number }): Promise<void> {
    await this.deadLetter(job, deliveryId, config, failure);
    if (job.data.replay === undefined) await this.settleAndContinue(job.data, 'dead');
  }

  private async deadLetter(
    job: Job<PushJobData>,
    deliveryId: string,
    config: StoredPushConfig | undefined,
    failure: { error: string; status?: number; configDisabled?: boolean },
  ): Promise<void> {
    const data = job.data;
    const earlier = data.replay === undefined ? undefined : await this.options.store.readDeadLetter(deliveryId);
    let event: unknown = null;
    try {
      event = data.eventJson === '' ? null : JSON.parse(data.eventJson);
    } catch {
      event = data.eventJson;
    }
    const letter: DeadLetter = {
      id: deliveryId,
      taskId: data.taskId,
      configId: data.configId,
      eventId: data.eventId,
      ownerKey: earlier?.ownerKey ?? (await this.ownerKeyOf(data.taskId)),
      url: config?.url ?? earlier?.url ?? '',
      attempts: (earlier?.attempts ?? 0) + job.attemptsMade + 1,
      firstAttemptAt: earlier?.firstAttemptAt ?? new Date(job.timestamp).toISOString(),
      deadAt: new Date().toISOString(),
      lastError: failure.error,
      replays: data.replay ?? 0,
      event,
    };
    if (failure.status !== undefined) letter.lastStatus = failure.status;
    if (failure.configDisabled === true) letter.configDisabled = true;
    await this.options.store.recordDeadLetter(letter, this.options.maxDeadLetters);
    pushDeadLetters.inc();
    logFailure(this.options.logger, 'push-dead-lettered', {
      cause: failure.error,
      taskId: data.taskId,
      ...(letter.ownerKey === '' ? {} : { owner: letter.ownerKey, agent: ownerFromKey(letter.ownerKey).agent }),
      configId: data.configId,
      deliveryId,
      receiver: letter.url === '' ? undefined : originOf(letter.url),
      attempts: letter.attempts,
      ...(failure.status === undefined ? {} : { status: failure.status }),
      ...(failure.configDisabled === true ? { configDisabled: true } : {}),
    });
  }

  private async ownerKeyOf(taskId: string): Promise<string> {
    return this.options.store.taskOwnerKey(taskId);
  }
}
