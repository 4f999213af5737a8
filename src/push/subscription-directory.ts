// Which subscriptions cover a new task, answered without a Redis round trip in the common case:
// each gateway keeps the subscriptions of the owners it served recently (none, mostly), drops an
// owner's copy when a change to them is announced (src/store/push/subscription-store.ts), drops
// them all when its subscriber reconnects (announcements may have been missed meanwhile), and
// reads an owner again after MAX_AGE_MS at the latest. A subscription created through another
// gateway covers this gateway's new tasks from the moment its announcement arrives.
import type { RedisClient } from '../redis/connection.ts';
import type { StoredSubscription, SubscriptionStore } from '../store/push/subscription-store.ts';

/** Owners whose subscriptions one gateway keeps (the least recently read go first). */
const MAX_OWNERS = 10_000;
/** The longest a copy is trusted without an announcement (a safety net for a lost one). */
const MAX_AGE_MS = 60_000;

interface Entry {
  subscriptions: Promise<StoredSubscription[]>;
  readAtMs: number;
}

export class SubscriptionDirectory {
  private readonly owners = new Map<string, Entry>();

  constructor(private readonly store: SubscriptionStore) {}

  /** The owner's subscriptions, from the copy when it is fresh. */
  async forOwner(ownerKey: string): Promise<StoredSubscription[]> {
    const now = Date.now();
    const entry = this.owners.get(ownerKey);
    if (entry !== undefined && now - entry.readAtMs < MAX_AGE_MS) return entry.subscriptions;
    const subscriptions = this.store.list(ownerKey);
    const fresh: Entry = { subscriptions, readAtMs: now };
    this.owners.delete(ownerKey);
    this.owners.set(ownerKey, fresh);
    if (this.owners.size > MAX_OWNERS) this.owners.delete(this.owners.keys().next().value as string);
    // A failed read is not kept: the next task asks again.
    subscriptions.catch(() => {
      if (this.owners.get(ownerKey) === fresh) this.owners.delete(ownerKey);
    });
    return subscriptions;
  }

  /** The owner's subscriptions changed (here or elsewhere): the next read goes to Redis. */
  invalidate(ownerKey: string): void {
    this.owners.delete(ownerKey);
  }

  /** Listens for announced changes on a subscriber connection (the event hub's). */
  listen(subscriber: RedisClient): Promise<unknown> {
    const channel = this.store.changedChannel();
    subscriber.on('message', (from: string, ownerKey: string) => {
      if (from === channel) this.invalidate(ownerKey);
    });
    let connectedOnce = subscriber.status === 'ready';
    subscriber.on('ready', () => {
      if (connectedOnce) this.owners.clear();
      connectedOnce = true;
    });
    return subscriber.subscribe(channel);
  }
}
