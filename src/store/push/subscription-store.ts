// Push subscriptions in Redis: one hash per owner, in the owner's own slot (`{subs:<ownerKey>}`),
// subscription id → stored subscription JSON. They live until deleted (no expiry), so they
// survive restarts. Changes are announced on one pub/sub channel, the owner key as the message,
// so every gateway drops its cached copy of that owner's subscriptions (src/push/subscription-directory.ts).
import type { RedisClient } from '../../redis/connection.ts';

/** A subscription as stored: the webhook of a push config and which of the owner's tasks it covers. */
export interface StoredSubscription {
  id: string;
  url: string;
  token?: string;
  authentication?: { scheme: string; credentials?: string };
  /** Only the tasks of this context; every task of the owner when absent. */
  contextId?: string;
  createdAtMs: number;
}

export type SubscriptionSaveResult = { kind: 'saved' } | { kind: 'too-many'; count: number };

export class SubscriptionStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private key(ownerKey: string): string {
    return `${this.prefix}:{subs:${ownerKey}}:subs`;
  }

  /** Pub/sub channel on which a change to an owner's subscriptions is announced (the owner key is the message). */
  changedChannel(): string {
    return `${this.prefix}:push:subs-changed`;
  }

  /**
   * Stores a new subscription unless the owner would have more than `max`. Added and counted in
   * one transaction; one over the bound is taken back, so concurrent creations at the bound may
   * both be refused but never both kept.
   */
  async save(ownerKey: string, subscription: StoredSubscription, max: number): Promise<SubscriptionSaveResult> {
    const key = this.key(ownerKey);
    const replies = await this.redis.multi().hset(key, subscription.id, JSON.stringify(subscription)).hlen(key).exec();
    const failed = replies?.find(([error]) => error !== null)?.[0];
    if (replies === null || failed) throw failed ?? new Error('the subscription transaction was discarded');
    const count = Number(replies[1]?.[1]);
    if (count > max) {
      await this.redis.hdel(key, subscription.id);
      return { kind: 'too-many', count: count - 1 };
    }
    return { kind: 'saved' };
  }

  /** The owner's subscriptions, oldest first. */
  async list(ownerKey: string): Promise<StoredSubscription[]> {
    const values = await this.redis.hvals(this.key(ownerKey));
    return values.map((json) => JSON.parse(json) as StoredSubscription).sort((a, b) => a.createdAtMs - b.createdAtMs || a.id.localeCompare(b.id));
  }

  async read(ownerKey: string, id: string): Promise<StoredSubscription | undefined> {
    const json = await this.redis.hget(this.key(ownerKey), id);
    return json === null ? undefined : (JSON.parse(json) as StoredSubscription);
  }

  async exists(ownerKey: string, id: string): Promise<boolean> {
    return (await this.redis.hexists(this.key(ownerKey), id)) === 1;
  }

  /** False when there was no such subscription. */
  async remove(ownerKey: string, id: string): Promise<boolean> {
    return (await this.redis.hdel(this.key(ownerKey), id)) === 1;
  }

  /** Tells every gateway the owner's subscriptions changed. */
  async announceChanged(ownerKey: string): Promise<void> {
    await this.redis.publish(this.changedChannel(), ownerKey);
  }
}
