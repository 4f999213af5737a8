// Live delivery for one gateway process: a single Redis connection pattern-subscribes to every
// task's event channel and fans each event out to the in-process listeners of that task. An
// idle SSE client therefore costs a map entry and a callback, never a Redis connection.
import type { Redis } from 'ioredis';
import type { TaskState } from '../protocol/types.ts';
import type { RedisKeys } from '../store/keys.ts';

export interface LiveEvent {
  /** Redis Stream id of the event: the SSE `id:` and the Last-Event-ID to resume from. */
  id: string;
  /** The StreamResponse JSON as stored; forwarded to clients without re-serializing. */
  json: string;
  /** The task state a status update or Task snapshot carries; undefined for other events. */
  state: TaskState | undefined;
}

// Quotes inside JSON strings are escaped, so the first unescaped `"status":{"state":"` is the
// event's own status (Task snapshots and status updates both serialize ids before status).
const STATE_PATTERN = /^\{"(?:statusUpdate|task)":\{.*?"status":\{"state":"(TASK_STATE_[A-Z_]+)"/;

/** The state of a stored or published event, read without parsing the whole event. */
export function stateOfEventJson(json: string): TaskState | undefined {
  return STATE_PATTERN.exec(json)?.[1] as TaskState | undefined;
}

export type LiveListener = (event: LiveEvent) => void;
/** Called after the hub's Redis connection came back: events may have been missed meanwhile. */
export type GapListener = () => void;

interface Subscription {
  onEvent: LiveListener;
  onGap: GapListener | undefined;
}

/** Compares two Redis Stream ids ("<ms>-<seq>") numerically. */
export function compareEventIds(a: string, b: string): number {
  const [aMs = '0', aSeq = '0'] = a.split('-');
  const [bMs = '0', bSeq = '0'] = b.split('-');
  const ms = Number(aMs) - Number(bMs);
  return ms !== 0 ? Math.sign(ms) : Math.sign(Number(aSeq) - Number(bSeq));
}

export class EventHub {
  private readonly listeners = new Map<string, Set<Subscription>>();
  private readonly channelPrefix: string;
  private ready: Promise<void> | undefined;
  private connectedOnce = false;

  constructor(
    private readonly subscriber: Redis,
    private readonly keys: RedisKeys,
  ) {
    this.channelPrefix = keys.eventChannel('');
    subscriber.on('pmessage', (_pattern: string, channel: string, message: string) => this.dispatch(channel, message));
    subscriber.on('ready', () => {
      // A reconnect re-subscribes (ioredis does that), but messages published while we were
      // away are gone: tell every listener so it re-reads the replay buffer.
      if (this.connectedOnce) for (const set of this.listeners.values()) for (const s of set) s.onGap?.();
      this.connectedOnce = true;
    });
  }

  /** Subscribes once; resolves when Redis confirmed the subscription. */
  start(): Promise<void> {
    this.ready ??= this.subscriber.psubscribe(this.keys.eventChannelPattern()).then(() => undefined);
    return this.ready;
  }

  /** Number of in-process listeners of one task (what the subscriber-leak test watches). */
  listenerCount(taskId?: string): number {
    if (taskId !== undefined) return this.listeners.get(taskId)?.size ?? 0;
    let total = 0;
    for (const set of this.listeners.values()) total += set.size;
    return total;
  }

  /** Adds a listener; the returned function removes it at once (call it when a client leaves). */
  listen(taskId: string, onEvent: LiveListener, onGap?: GapListener): () => void {
    const subscription: Subscription = { onEvent, onGap };
    let set = this.listeners.get(taskId);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(taskId, set);
    }
    set.add(subscription);
    return () => {
      const current = this.listeners.get(taskId);
      if (current === undefined) return;
      current.delete(subscription);
      if (current.size === 0) this.listeners.delete(taskId);
    };
  }

  private dispatch(channel: string, message: string): void {
    const taskId = channel.slice(this.channelPrefix.length);
    const set = this.listeners.get(taskId);
    if (set === undefined) return; // Most events are for tasks nobody here watches: skip the parse.
    const newline = message.indexOf('\n');
    const json = message.slice(newline + 1);
    const live: LiveEvent = { id: message.slice(0, newline), json, state: stateOfEventJson(json) };
    for (const subscription of [...set]) subscription.onEvent(live);
  }
}
