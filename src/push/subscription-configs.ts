// How a subscription reaches a task: as one push config per matching subscription, put on the
// task when it is created, with its cursor at the task's first event. From there the task's
// outbox, the delivery queue, signing, retries, the breaker and dead letters treat it like any
// config, so a subscription has every guarantee a config has. Its config id is
// `sub-<subscription id>`: putting it on again (a retried creation) changes nothing.
import type { PushStore } from '../store/push/push-store.ts';
import type { StoredSubscription } from '../store/push/subscription-store.ts';
import type { StoredPushConfig } from './push-config.ts';

export const SUBSCRIPTION_CONFIG_PREFIX = 'sub-';

/** The config a subscription puts on a task. */
export function subscriptionConfig(ownerKey: string, subscription: StoredSubscription, taskId: string): StoredPushConfig {
  const config: StoredPushConfig = {
    id: `${SUBSCRIPTION_CONFIG_PREFIX}${subscription.id}`,
    taskId,
    url: subscription.url,
    createdAtMs: subscription.createdAtMs,
    subscription: { id: subscription.id, ownerKey },
  };
  if (subscription.token !== undefined) config.token = subscription.token;
  if (subscription.authentication !== undefined) config.authentication = subscription.authentication;
  return config;
}

/** The subscriptions that cover a task of this context. */
export const matchingSubscriptions = (subscriptions: readonly StoredSubscription[], contextId: string): StoredSubscription[] =>
  subscriptions.filter((s) => s.contextId === undefined || s.contextId === contextId);

export interface AttachDeps {
  store: PushStore;
  /** Most configs one task may have, subscriptions' configs included (push.maxConfigsPerTask + push.maxSubscriptionsPerOwner). */
  maxConfigs: number;
  /** Called once the task is indexed in the outbox (workers start its deliveries at once). */
  onIndexed?: (taskId: string) => void;
}

/**
 * Puts extra configs (subscriptions', a schedule's) on a new task of the owner, each seeing every
 * event from the task's first, then indexes the task once. Returns how many were stored.
 */
export async function attachConfigs(deps: AttachDeps, ownerKey: string, configs: readonly StoredPushConfig[]): Promise<number> {
  if (configs.length === 0) return 0;
  const saved = await Promise.all(configs.map((config) => deps.store.saveConfig(ownerKey, config, deps.maxConfigs, 'begin')));
  const stored = saved.filter((s) => s.kind === 'saved').length;
  const taskId = configs[0]?.taskId as string;
  if (stored > 0) {
    await deps.store.index(taskId);
    deps.onIndexed?.(taskId);
  }
  return stored;
}

/**
 * The body a subscription's receiver gets: the StreamResponse, its payload's metadata noting the
 * subscription and the task (`metadata.a2aGateway.subscription`), inside the signed body.
 */
export function withSubscriptionNote(eventJson: string, subscriptionId: string, taskId: string): string {
  let event: Record<string, unknown>;
  try {
    event = JSON.parse(eventJson) as Record<string, unknown>;
  } catch {
    return eventJson;
  }
  const kind = ['task', 'statusUpdate', 'artifactUpdate', 'message'].find((k) => typeof event[k] === 'object' && event[k] !== null);
  if (kind === undefined) return eventJson;
  const payload = event[kind] as Record<string, unknown>;
  const metadata = typeof payload.metadata === 'object' && payload.metadata !== null ? (payload.metadata as Record<string, unknown>) : {};
  const gateway = typeof metadata.a2aGateway === 'object' && metadata.a2aGateway !== null ? (metadata.a2aGateway as Record<string, unknown>) : {};
  const noted = { ...payload, metadata: { ...metadata, a2aGateway: { ...gateway, subscription: { id: subscriptionId, taskId } } } };
  return JSON.stringify({ ...event, [kind]: noted });
}
