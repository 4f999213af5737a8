// The writes of one turn's run, in the order the adapter made them even when it does not await
// each call. The first failure (a stale lease, an output bound) stops every later write: each
// one queued after it fails with the same error, so a run cannot store past the point where the
// store refused it.
import type { CarriedEvent, EventPlace } from '../store/task-store.ts';

/**
 * An append the turn's final write took over: it stores `event` with the final status, in one
 * script call instead of two, and settles the append with what the store answered.
 */
export interface CarriedAppend {
  event: CarriedEvent;
  /** Settles the taken append: stored (no error), or refused with the final write's error. */
  settle(error?: Error): void;
}

/**
 * The writes still pending when all of them are appends of the adapter's events: the last one's
 * place, once its command is on its way (see TurnWriteQueue.pendingAppends), and the queue's
 * settling, which resolves when every write is stored and rejects with the first failure.
 * `takeHeld`: the last append, taken over by the final write, when it is the one write pending
 * and still held back (TurnWriteQueue.offerToFinal); the final write then neither waits for
 * `sent` nor names `last`.
 */
export interface PendingAppends {
  last: EventPlace;
  sent: Promise<void>;
  settled: Promise<void>;
  takeHeld(): CarriedAppend | undefined;
}

/** What an append offered to the final write learns: send it yourself, or it was stored with the final status. */
export type OfferOutcome = 'send' | 'carried';

export class TurnWriteQueue {
  private writes: Promise<void> = Promise.resolve();
  private writeError: Error | undefined;
  /** Writes queued and not yet settled, and how many of them are not appends of the adapter's events. */
  private pending = 0;
  private pendingOthers = 0;
  /** The last append queued: its place and when its command was sent (or it settled without one). */
  private lastAppend: { place: EventPlace; sent: Promise<void> } | undefined;
  /** An append held back for the final write to take (offerToFinal), while it is. */
  private held: { take: () => CarriedAppend | undefined } | undefined;

  /** Queues `write`; its promise settles with this write's own outcome. */
  enqueue(write: () => Promise<void>): Promise<void> {
    this.pendingOthers += 1;
    return this.track(write, () => {
      this.pendingOthers -= 1;
    });
  }

  /**
   * Queues the append of an adapter's event at `place`. `write` calls `sent()` once the store's
   * command is on its way, so a write sent after it on the same connection reaches the store after
   * it; an append that sends more than one command in a row (a snapshot in segments) does not call it.
   */
  enqueueAppend(place: EventPlace, write: (sent: () => void) => Promise<void>): Promise<void> {
    let markSent = (): void => undefined;
    const sent = new Promise<void>((resolve) => {
      markSent = resolve;
    });
    const queued = this.track(
      () => write(markSent),
      () => markSent(),
    );
    this.lastAppend = { place, sent };
    return queued;
  }

  private track(write: () => Promise<void>, onSettled: () => void): Promise<void> {
    this.pending += 1;
    const next = this.writes.then(async () => {
      if (this.writeError !== undefined) throw this.writeError;
      try {
        await write();
      } catch (error) {
        this.writeError ??= error as Error;
        throw error;
      }
    });
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    void settled.then(() => {
      this.pending -= 1;
      onSettled();
    });
    // Keep the chain alive for later writes; the caller still sees this write's failure.
    this.writes = settled;
    return next;
  }

  /**
   * Holds an append's command back for one turn of the event loop (setImmediate), so that a turn
   * ending right after its last emit (the demo's echo, an adapter that returns without awaiting)
   * stores that event with its final status in one script call instead of two. Called from the
   * append's own write, where its command would go out. Resolves 'send' when nothing took it
   * meanwhile (the write sends it as usual; a stream waits that one turn more for the event);
   * 'carried' once the final write that took it stored it; rejects with that write's refusal.
   */
  offerToFinal(event: CarriedEvent): Promise<OfferOutcome> {
    return new Promise<OfferOutcome>((resolve, reject) => {
      let open = true;
      const held = {
        take: (): CarriedAppend | undefined => {
          if (!open) return undefined;
          open = false;
          this.held = undefined;
          return { event, settle: (error) => (error === undefined ? resolve('carried') : reject(error)) };
        },
      };
      this.held = held;
      setImmediate(() => {
        if (!open) return;
        open = false;
        if (this.held === held) this.held = undefined;
        resolve('send');
      });
    });
  }

  /** Queues a call whose result the caller needs (a read ordered after the writes before it). */
  enqueueValue<T>(read: () => Promise<T>): Promise<T> {
    let result: T | undefined;
    return this.enqueue(async () => {
      result = await read();
    }).then(() => result as T);
  }

  /**
   * The pending writes, when every one of them appends an adapter's event (undefined when nothing
   * is pending or anything else is). A turn's final write sent once `sent` resolves reaches the
   * store behind all of them; checking there that the last one was stored tells whether all were,
   * since a failed write stops every later one.
   */
  pendingAppends(): PendingAppends | undefined {
    if (this.pending === 0 || this.pendingOthers > 0 || this.lastAppend === undefined) return undefined;
    return {
      last: this.lastAppend.place,
      sent: this.lastAppend.sent,
      settled: this.settle(),
      // Only the one write pending: an earlier append still unanswered would need naming (`last`).
      takeHeld: () => (this.pending === 1 ? this.held?.take() : undefined),
    };
  }

  /** Resolves once every write queued so far has finished, whatever its outcome. */
  drained(): Promise<void> {
    return this.writes;
  }

  /** Waits for every queued write; rethrows the first failure. */
  async settle(): Promise<void> {
    await this.writes;
    if (this.writeError !== undefined) throw this.writeError;
  }
}
