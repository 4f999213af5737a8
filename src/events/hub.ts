// Live delivery for one gateway process: a single Redis connection pattern-subscribes to every
// task's event channel and fans each event out to the in-process listeners of that task. An
// idle SSE client therefore costs a map entry and a callback, never a Redis connection.
// On a Redis Cluster the scripts SPUBLISH in the task's slot, and the hub SSUBSCRIBEs each
// watched task's channel while it has a local listener (the subscriber holds one connection
// per master): an event travels only to the shard owning its task and to gateways watching it.
import { isCluster, whenReady } from '../redis/connection.ts';
import type { RedisClient } from '../redis/connection.ts';
import type { TaskState } from '../protocol/types.ts';
import type { TaskChannels } from '../store/channels.ts';

export interface LiveEvent {
  /** Redis Stream id of the event: the SSE `id:` and the Last-Event-ID to resume from. */
  id: string;
  /** The StreamResponse JSON as stored; forwarded to clients without re-serializing. */
  json: string;
  /** The task state a status update or Task snapshot carries; undefined for other events. */
  state: TaskState | undefined;
  /**
   * The task as it stands after this event, for the SendMessage that created it and waits
   * (createTask's answerHistoryLength): the readTask script's reply as a JSON array. Live delivery
   * only; absent from buffer reads, and from most events.
   */
  answer?: string;
}

// Quotes inside JSON strings are escaped, so the first unescaped `"status":{"state":"` is the
// event's own status (Task snapshots and status updates both serialize ids before status).
const STATE_PATTERN = /^\{"(?:statusUpdate|task)":\{.*?"status":\{"state":"(TASK_STATE_[A-Z_]+)"/;

/** The state of a stored or published event, read without parsing the whole event. */
export function stateOfEventJson(json: string): TaskState | undefined {
  return STATE_PATTERN.exec(json)?.[1] as TaskState | undefined;
}

export type LiveListener = (event: LiveEvent) => void;
/** Reads one stored event's JSON by its id; undefined when the replay buffer no longer holds it. */
export type ReadAnnouncedEvent = (taskId: string, id: string) => Promise<string | undefined>;
/** Called after the hub's Redis connection came back: events may have been missed meanwhile. */
export type GapListener = () => void;
/** Called when live delivery has been down longer than the outage grace period. */
export type LostListener = (error: LiveDeliveryLostError) => void;

/** Live delivery stopped: the hub's Redis connection has been down for `downForMs`. */
export class LiveDeliveryLostError extends Error {
  constructor(
    readonly downForMs: number,
    reason?: string,
  ) {
    super(
      reason === undefined
        ? `Redis (the task store) has been unreachable for ${downForMs} ms, so live task events cannot be delivered.`
        : `The Redis node serving this task's events did not take the subscription (${reason}), so live task events cannot be delivered.`,
    );
    this.name = 'LiveDeliveryLostError';
  }
}

interface Subscription {
  onEvent: LiveListener;
  onGap: GapListener | undefined;
  onLost: LostListener | undefined;
  /** False for an event id the listener has had already (it would drop it); undefined: every event is wanted. */
  wants: ((id: string) => boolean) | undefined;
}

/** Compares two Redis Stream ids ("<ms>-<seq>") numerically. */
export function compareEventIds(a: string, b: string): number {
  // Same length and the dash at the same place: both parts have as many digits, so the text
  // compares as the numbers do (the usual case; no split, no allocation).
  if (a.length === b.length && a.indexOf('-') === b.indexOf('-')) return a < b ? -1 : a > b ? 1 : 0;
  const [aMs = '0', aSeq = '0'] = a.split('-');
  const [bMs = '0', bSeq = '0'] = b.split('-');
  const ms = Number(aMs) - Number(bMs);
  return ms !== 0 ? Math.sign(ms) : Math.sign(Number(aSeq) - Number(bSeq));
}

export class EventHub {
  private readonly listeners = new Map<string, Set<Subscription>>();
  /** Listeners of every task's events (operators' watch streams); usually none. */
  private readonly everyTaskListeners = new Set<Subscription>();
  /** Per-task SSUBSCRIBE (Cluster) rather than one PSUBSCRIBE of every task's channel. */
  private readonly sharded: boolean;
  /** Sharded mode: each watched task's subscription, resolved once Redis confirmed it. */
  private readonly subscriptions = new Map<string, Promise<void>>();
  private readonly outageGraceMs: number | undefined;
  private ready: Promise<void> | undefined;
  private connectedOnce = false;
  /** Set while the subscriber connection is down (after it had been up). */
  private downSinceMs: number | undefined;
  private outageTimer: NodeJS.Timeout | undefined;
  /** Set once the outage outlasted the grace period: listeners were told, new ones are told at once. */
  private lost: LiveDeliveryLostError | undefined;

  private readonly readAnnounced: ReadAnnouncedEvent | undefined;
  /**
   * Per task, the delivery of an event announced by id whose read is still in flight: what the
   * task publishes meanwhile is delivered after it, so listeners hear the task's events in order.
   */
  private readonly heldBehindRead = new Map<string, Promise<void>>();

  /**
   * `outageGraceMs`: how long the subscriber connection may be down before every listener is
   * told live delivery is lost (streams then end with a resume hint, blocked calls fail).
   * A shorter outage is invisible: after the reconnect every listener re-reads what it missed.
   * Without it, listeners wait for the reconnect however long it takes.
   * `readAnnounced`: reads an event the store announced by id only (a large one, see
   * include/appendEvent.lua), once for every listener here. Without it, or when the read finds
   * the event gone or fails, the task's listeners are told of a gap and re-read the buffer.
   */
  constructor(
    private readonly subscriber: RedisClient,
    private readonly channels: TaskChannels,
    options: { outageGraceMs?: number; readAnnounced?: ReadAnnouncedEvent } = {},
  ) {
    this.sharded = isCluster(subscriber);
    this.outageGraceMs = options.outageGraceMs;
    this.readAnnounced = options.readAnnounced;
    // The message as bytes: decoded only for a task someone here watches. Every task's events
    // reach this connection, some of them a megabyte each (a large artifact update), and
    // decoding each into a string nobody reads took the event loop seconds in a busy minute.
    if (this.sharded) subscriber.on('smessageBuffer', (channel: Buffer, message: Buffer) => this.dispatch(channel.toString(), message));
    else subscriber.on('pmessageBuffer', (_pattern: string, channel: Buffer, message: Buffer) => this.dispatch(channel.toString(), message));
    // A Cluster failover moves a shard's subscriptions to its promoted replica: ioredis stops the
    // dead master's subscriber, starts one on the new master and re-sends the SSUBSCRIBEs, then
    // says 'subscribersReady'. Whatever the shard published in between reached no one live, so
    // the same catch-up as after a reconnect follows: every listener re-reads the replay buffer.
    if (this.sharded) {
      subscriber.on('subscribersReady', () => {
        if (!this.connectedOnce) return;
        this.subscribeAgain().then(
          () => this.onResubscribed(),
          () => undefined, // the shard moved again before the reply: its next 'subscribersReady' retries
        );
      });
    }
    subscriber.on('close', () => this.onDisconnected());
    subscriber.on('end', () => clearTimeout(this.outageTimer));
    subscriber.on('ready', () => {
      if (!this.connectedOnce) {
        this.connectedOnce = true;
        return;
      }
      // ioredis emits 'ready' before it re-sends the subscription, so a buffer read started
      // now could miss an event published before the subscription is back. Subscribing
      // again (a no-op for Redis) and waiting for its reply closes that window: replies
      // come in order, so the reconnect's own re-subscription has been applied by then.
      this.subscribeAgain().then(
        () => this.onResubscribed(),
        () => undefined, // dropped again before the reply: the next 'ready' retries
      );
    });
  }

  /** What a reconnect re-sends (ioredis does it too; the reply orders it before any buffer read). */
  private async subscribeAgain(): Promise<void> {
    if (!this.sharded) {
      await this.subscriber.psubscribe(this.channels.eventChannelPattern());
      return;
    }
    await Promise.all([...this.subscriptions.keys()].map((taskId) => this.subscriber.ssubscribe(this.channels.eventChannel(taskId))));
  }

  private onDisconnected(): void {
    if (!this.connectedOnce || this.downSinceMs !== undefined) return; // not up yet, or already down
    this.downSinceMs = Date.now();
    if (this.outageGraceMs === undefined) return;
    this.outageTimer = setTimeout(() => {
      if (this.downSinceMs === undefined) return;
      this.lost = new LiveDeliveryLostError(Date.now() - this.downSinceMs);
      for (const set of this.allSubscriptionSets()) for (const s of [...set]) s.onLost?.(this.lost);
    }, this.outageGraceMs);
    this.outageTimer.unref();
  }

  private onResubscribed(): void {
    clearTimeout(this.outageTimer);
    this.downSinceMs = undefined;
    this.lost = undefined;
    // Messages published while we were away are gone: every listener re-reads the replay buffer.
    for (const set of this.allSubscriptionSets()) for (const s of [...set]) s.onGap?.();
  }

  private allSubscriptionSets(): Set<Subscription>[] {
    return [...this.listeners.values(), this.everyTaskListeners];
  }

  /** True while live delivery works (what a health check can report). */
  get connected(): boolean {
    return this.connectedOnce && this.downSinceMs === undefined;
  }

  /** Subscribes once (sharded mode: connects; tasks are subscribed as they are watched); resolves when Redis confirmed it. */
  start(): Promise<void> {
    this.ready ??= whenReady(this.subscriber)
      .then(() => (this.sharded ? undefined : this.subscriber.psubscribe(this.channels.eventChannelPattern())))
      .then(() => undefined);
    return this.ready;
  }

  /**
   * Resolves once events of the task published from now on reach its listeners: at once with the
   * pattern subscription, after Redis confirmed the task's SSUBSCRIBE in sharded mode. A feed
   * reads the replay buffer only after this, so nothing falls between the read and live delivery.
   */
  listening(taskId: string): Promise<void> {
    return this.subscriptions.get(taskId) ?? Promise.resolve();
  }

  /** Whether each listener costs a subscription of its own task (what a caller may not skip waiting for). */
  get subscribesPerTask(): boolean {
    return this.sharded;
  }

  private subscribeTask(taskId: string): Promise<void> {
    const subscribed = (this.ready ?? whenReady(this.subscriber))
      .then(() => this.subscriber.ssubscribe(this.channels.eventChannel(taskId)))
      .then(
        () => undefined,
        (error: Error) => {
          // The task's shard did not take the subscription (its master is failing over): its
          // listeners cannot be served live; they are told, as in an outage, and may resume.
          if (this.subscriptions.get(taskId) !== subscribed) return;
          this.subscriptions.delete(taskId);
          const lost = new LiveDeliveryLostError(0, error.message);
          for (const s of [...(this.listeners.get(taskId) ?? [])]) s.onLost?.(lost);
        },
      );
    return subscribed;
  }

  private unsubscribeTask(taskId: string): void {
    if (!this.subscriptions.delete(taskId)) return;
    this.subscriber.sunsubscribe(this.channels.eventChannel(taskId)).catch(() => undefined);
  }

  /** Number of in-process listeners of one task (what the subscriber-leak test watches). */
  listenerCount(taskId?: string): number {
    if (taskId !== undefined) return this.listeners.get(taskId)?.size ?? 0;
    let total = 0;
    for (const set of this.listeners.values()) total += set.size;
    return total;
  }

  /**
   * Adds a listener; the returned function removes it at once (call it when a client leaves).
   * `wants` tells an event id the listener has had already: an event announced by id that no
   * listener wants is not read at all (a wait that starts after a large creation event, say).
   */
  listen(taskId: string, onEvent: LiveListener, onGap?: GapListener, onLost?: LostListener, wants?: (id: string) => boolean): () => void {
    const subscription: Subscription = { onEvent, onGap, onLost, wants };
    let set = this.listeners.get(taskId);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(taskId, set);
      if (this.sharded) this.subscriptions.set(taskId, this.subscribeTask(taskId));
    }
    set.add(subscription);
    // Live delivery is already known to be down: say so now rather than wait silently.
    const lost = this.lost;
    if (lost !== undefined && onLost !== undefined) queueMicrotask(() => set.has(subscription) && onLost(lost));
    return () => {
      const current = this.listeners.get(taskId);
      if (current === undefined) return;
      current.delete(subscription);
      if (current.size > 0) return;
      this.listeners.delete(taskId);
      if (this.sharded) this.unsubscribeTask(taskId);
    };
  }

  /**
   * Adds a listener of every task's events, as this process receives them (its one pattern
   * subscription): for operators' watch streams. The returned function removes it. Not in
   * sharded mode, where no connection hears every task (see watchesEveryTask).
   */
  listenToEveryTask(onEvent: LiveListener, onGap?: GapListener, onLost?: LostListener): () => void {
    const subscription: Subscription = { onEvent, onGap, onLost, wants: undefined };
    this.everyTaskListeners.add(subscription);
    const lost = this.lost;
    if (lost !== undefined && onLost !== undefined) queueMicrotask(() => this.everyTaskListeners.has(subscription) && onLost(lost));
    return () => void this.everyTaskListeners.delete(subscription);
  }

  /** False on a Redis Cluster: events travel only to the gateways subscribed to their task. */
  get watchesEveryTask(): boolean {
    return !this.sharded;
  }

  private dispatch(channel: string, bytes: Buffer): void {
    const taskId = this.channels.taskOfEventChannel(channel);
    if (taskId === undefined) return;
    // Most events are for tasks nobody here watches: skip the decoding and the parse.
    if (!this.listeners.has(taskId) && this.everyTaskListeners.size === 0) return;
    const message = bytes.toString();
    const newline = message.indexOf('\n');
    if (newline < 0) {
      this.deliverAnnounced(taskId, message);
      return;
    }
    // Event JSON holds no raw newline: a second one starts the answer (the appendEvent fragment of the store's scripts).
    const trailer = message.indexOf('\n', newline + 1);
    const json = trailer < 0 ? message.slice(newline + 1) : message.slice(newline + 1, trailer);
    const live: LiveEvent = { id: message.slice(0, newline), json, state: stateOfEventJson(json) };
    if (trailer >= 0) live.answer = message.slice(trailer + 1);
    const held = this.heldBehindRead.get(taskId);
    if (held === undefined) this.deliver(taskId, live);
    else this.holdBehind(taskId, held.then(() => this.deliver(taskId, live)));
  }

  /** An event announced by its id alone: read once, delivered in its place among the task's events. */
  private deliverAnnounced(taskId: string, id: string): void {
    const wanted = this.everyTaskListeners.size > 0 || [...(this.listeners.get(taskId) ?? [])].some((subscription) => subscription.wants?.(id) !== false);
    if (!wanted) return;
    const read = this.readAnnounced?.(taskId, id).catch(() => undefined) ?? Promise.resolve(undefined);
    const held = this.heldBehindRead.get(taskId) ?? Promise.resolve();
    this.holdBehind(
      taskId,
      Promise.all([held, read]).then(([, json]) => {
        if (json !== undefined) {
          this.deliver(taskId, { id, json, state: stateOfEventJson(json) });
          return;
        }
        // Trimmed before it was read, or Redis did not answer: each listener re-reads from what
        // it last got, and learns there whether it fell behind the buffer.
        for (const subscription of [...(this.listeners.get(taskId) ?? []), ...this.everyTaskListeners]) subscription.onGap?.();
      }),
    );
  }

  private holdBehind(taskId: string, delivery: Promise<void>): void {
    // A listener that throws is its own bug (live delivery calls them synchronously otherwise):
    // it must not stop the task's later events nor surface as an unhandled rejection.
    const delivered = delivery.catch(() => undefined);
    this.heldBehindRead.set(taskId, delivered);
    void delivered.then(() => {
      if (this.heldBehindRead.get(taskId) === delivered) this.heldBehindRead.delete(taskId);
    });
  }

  private deliver(taskId: string, live: LiveEvent): void {
    for (const subscription of [...(this.listeners.get(taskId) ?? [])]) subscription.onEvent(live);
    for (const subscription of [...this.everyTaskListeners]) subscription.onEvent(live);
  }
}
