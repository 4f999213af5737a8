// Push subscriptions (gateway extension, src/extensions/subscriptions.ts): an owner registers a
// webhook once and gets the events of every task of theirs created afterwards, or of one
// context's. A subscription is checked like a push config (URL form, SSRF receiver policy with
// its host resolved now, no masks for secrets), stored under its owner (tenant and agent
// included: another owner never sees it), and put on each new task it covers as a push config
// (subscription-configs.ts), so its deliveries are signed, retried, dead-lettered and counted
// like every other. Secrets are write-only, as for configs.
import { newId } from '../ids.ts';
import { A2AError } from '../protocol/errors.ts';
import { LimitExceededError } from '../limits/limit-refusal.ts';
import { ownerKeyOf, type Owner } from '../store/owner.ts';
import type { StoredSubscription, SubscriptionStore } from '../store/push/subscription-store.ts';
import { maskedToken, SECRET_MASK } from './push-config.ts';
import type { PushConfigs } from './push-configs.ts';
import { attachConfigs, matchingSubscriptions, subscriptionConfig } from './subscription-configs.ts';
import type { SubscriptionDirectory } from './subscription-directory.ts';
import type { PushStore } from '../store/push/push-store.ts';

export interface CreateSubscriptionRequest {
  tenant?: string;
  url: string;
  token?: string;
  authentication?: { scheme: string; credentials?: string };
  contextId?: string;
}

/** A subscription as the API returns it (secrets masked). */
export interface SubscriptionView {
  id: string;
  tenant?: string;
  url: string;
  token?: string;
  authentication?: { scheme: string; credentials?: string };
  contextId?: string;
  createdAt: string;
}

export interface SubscriptionServiceOptions {
  store: SubscriptionStore;
  directory: SubscriptionDirectory;
  /** Checks a webhook as for a push config (receiver policy, masks). */
  configs: PushConfigs;
  pushStore: PushStore;
  maxPerOwner: number;
  maxConfigsPerTask: number;
  /** Called once a task is indexed in the outbox (workers start its deliveries at once). */
  onIndexed?: (taskId: string) => void;
}

export const subscriptionNotFound = (id: string): A2AError =>
  new A2AError('TASK_NOT_FOUND', `Subscription ${id} was not found: it does not exist, was deleted, or is not yours.`, {
    metadata: { subscriptionId: id, reason: 'SUBSCRIPTION_NOT_FOUND' },
  });

export function subscriptionView(subscription: StoredSubscription, tenant: string | undefined): SubscriptionView {
  const view: SubscriptionView = { id: subscription.id, url: subscription.url, createdAt: new Date(subscription.createdAtMs).toISOString() };
  if (tenant !== undefined && tenant !== '') view.tenant = tenant;
  if (subscription.token !== undefined) view.token = maskedToken(subscription.token);
  if (subscription.authentication !== undefined) {
    view.authentication = { scheme: subscription.authentication.scheme };
    if (subscription.authentication.credentials !== undefined) view.authentication.credentials = SECRET_MASK;
  }
  if (subscription.contextId !== undefined) view.contextId = subscription.contextId;
  return view;
}

export class SubscriptionService {
  constructor(private readonly options: SubscriptionServiceOptions) {}

  async create(owner: Owner, request: CreateSubscriptionRequest): Promise<SubscriptionView> {
    const { store, directory } = this.options;
    const { url, token, authentication } = request;
    // The push config's own checks (masked secrets, receiver policy); nothing is written.
    const checked = await this.options.configs.prepare('', { url, ...(token === undefined ? {} : { token }), ...(authentication === undefined ? {} : { authentication }) }, '');
    const subscription: StoredSubscription = { id: newId(), url: checked.url, createdAtMs: Date.now() };
    if (checked.token !== undefined) subscription.token = checked.token;
    if (checked.authentication !== undefined) subscription.authentication = checked.authentication;
    if (request.contextId !== undefined) subscription.contextId = request.contextId;
    const ownerKey = ownerKeyOf(owner);
    const saved = await store.save(ownerKey, subscription, this.options.maxPerOwner);
    if (saved.kind === 'too-many') {
      throw new LimitExceededError(
        'push.maxSubscriptionsPerOwner',
        'RESOURCE_EXHAUSTED',
        `You have ${saved.count} subscriptions with this agent, the most allowed (push.maxSubscriptionsPerOwner); nothing was stored. Delete one first.`,
        { metadata: { reason: 'SUBSCRIPTION_LIMIT', limit: String(this.options.maxPerOwner) } },
      );
    }
    // This gateway's next task sees it at once; the others when the announcement arrives.
    directory.invalidate(ownerKey);
    await store.announceChanged(ownerKey);
    return subscriptionView(subscription, owner.tenant);
  }

  async get(owner: Owner, id: string): Promise<SubscriptionView> {
    const subscription = await this.options.store.read(ownerKeyOf(owner), id);
    if (subscription === undefined) throw subscriptionNotFound(id);
    return subscriptionView(subscription, owner.tenant);
  }

  async list(owner: Owner): Promise<{ subscriptions: SubscriptionView[] }> {
    const subscriptions = await this.options.store.list(ownerKeyOf(owner));
    return { subscriptions: subscriptions.map((s) => subscriptionView(s, owner.tenant)) };
  }

  /** Deleted at once for new tasks; deliveries already under way for it stop at their next send. */
  async delete(owner: Owner, id: string): Promise<Record<string, never>> {
    const ownerKey = ownerKeyOf(owner);
    if (!(await this.options.store.remove(ownerKey, id))) throw subscriptionNotFound(id);
    this.options.directory.invalidate(ownerKey);
    await this.options.store.announceChanged(ownerKey);
    return {};
  }

  /** Starts reading the owner's subscriptions when this gateway has no fresh copy (a failure is seen by applyToNewTask). */
  prefetch(owner: Owner): void {
    this.options.directory.forOwner(ownerKeyOf(owner)).catch(() => undefined);
  }

  /**
   * Puts the owner's subscriptions that cover it on a new task. An owner without subscriptions
   * costs nothing here once this gateway has read them (see SubscriptionDirectory).
   */
  async applyToNewTask(owner: Owner, taskId: string, contextId: string): Promise<void> {
    const ownerKey = ownerKeyOf(owner);
    const subscriptions = matchingSubscriptions(await this.options.directory.forOwner(ownerKey), contextId);
    if (subscriptions.length === 0) return;
    await attachConfigs(
      { store: this.options.pushStore, maxConfigs: this.options.maxConfigsPerTask + this.options.maxPerOwner, onIndexed: this.options.onIndexed },
      ownerKey,
      subscriptions.map((s) => subscriptionConfig(ownerKey, s, taskId)),
    );
  }
}
