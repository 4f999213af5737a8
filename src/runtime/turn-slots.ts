// The places one worker process has for one agent's turns (its workerConcurrency). Queued jobs and
// turns started where they were accepted (local-turns.ts) share them, so the process never runs
// more of the agent's turns at once than its limit, however they arrived. A job that finds every
// place taken waits for one while BullMQ keeps renewing its lock; a new task finds none free and
// goes to the queue instead, after a wait in the same line when its caller waits for the turn
// anyway (TurnQueue.localSlot). Places freed go to waiting jobs first, in order, so a steady stream
// of new tasks never starves the queue.
// How long such a wait lasts follows the line: a newcomer stays in it while places keep freeing,
// up to its bound. Places held by long turns (none freed in two looks) send it to the queue;
// a burst of short turns larger than the places waits its turn here instead of paying for the queue.

/** How often a newcomer waiting in line looks whether the line still moves. */
export const LOOK_EVERY_MS = 50;
/** Looks in a row with no place freed since the one before: the line is held by long turns, a newcomer leaves it. */
export const STILL_LOOKS_TO_LEAVE = 2;

export class TurnSlots {
  private used = 0;
  private readonly waiting: (() => void)[] = [];
  /** Places given back so far: whether the line moved between two looks. */
  private freed = 0;
  /** When the line last moved (performance.now()): a place given back, or the last free one taken. */
  private movedAt = Number.NEGATIVE_INFINITY;

  constructor(private limit: number) {}

  /** Whether tryTake would give a place now. */
  hasFree(): boolean {
    return this.waiting.length === 0 && this.used < this.limit;
  }

  /**
   * Whether a newcomer joining the line now would likely get a place: one is free, or the line
   * moved within the time a waiter gives it before leaving (STILL_LOOKS_TO_LEAVE looks). Places
   * all held for longer than that with none given back are held by long turns.
   */
  moving(): boolean {
    return this.hasFree() || performance.now() - this.movedAt < LOOK_EVERY_MS * STILL_LOOKS_TO_LEAVE;
  }

  /** A place at once, or none: never waits, and never goes ahead of a job that is waiting. */
  tryTake(): boolean {
    if (!this.hasFree()) return false;
    this.used += 1;
    if (this.used === this.limit) this.movedAt = performance.now();
    return true;
  }

  /**
   * A place now, or one freed while it waits in line with the jobs (never ahead of them), for at
   * most `atMostMs` and only while the line moves (a place freed between its looks, LOOK_EVERY_MS
   * apart; STILL_LOOKS_TO_LEAVE looks without one and it leaves). False
   * when it gave up; it has then left the line.
   */
  takeWithin(atMostMs: number): Promise<boolean> {
    if (this.tryTake()) return Promise.resolve(true);
    if (atMostMs <= 0) return Promise.resolve(false);
    const deadline = performance.now() + atMostMs;
    // Looks count, not the clock: after an event-loop stall every waiter's look comes late, before
    // any place could be given back, and must not read that as a line standing still.
    let seen = this.freed;
    let stillLooks = 0;
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const granted = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      const look = (): void => {
        stillLooks = this.freed === seen ? stillLooks + 1 : 0;
        seen = this.freed;
        const left = deadline - performance.now();
        if (left >= 1 && stillLooks < STILL_LOOKS_TO_LEAVE) {
          timer = setTimeout(look, Math.min(LOOK_EVERY_MS, left));
          return;
        }
        const at = this.waiting.indexOf(granted);
        if (at >= 0) this.waiting.splice(at, 1);
        resolve(false);
      };
      this.waiting.push(granted);
      timer = setTimeout(look, Math.min(LOOK_EVERY_MS, atMostMs));
    });
  }

  /** A place, waiting in line for one when all are taken. */
  take(): Promise<void> {
    if (this.tryTake()) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Gives a place back: to the first job waiting, unless the limit was lowered below the places in use. */
  release(): void {
    this.freed += 1;
    this.movedAt = performance.now();
    if (this.used <= this.limit) {
      const next = this.waiting.shift();
      if (next !== undefined) {
        next();
        return;
      }
    }
    this.used = Math.max(0, this.used - 1);
  }

  /** A new limit (an agent's workerConcurrency changed); a raised one lets waiting jobs in at once. */
  setLimit(limit: number): void {
    this.limit = limit;
    while (this.used < this.limit && this.waiting.length > 0) {
      this.used += 1;
      this.waiting.shift()?.();
    }
  }
}
