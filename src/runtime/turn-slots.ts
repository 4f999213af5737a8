// The places one worker process has for one agent's turns (its workerConcurrency). Queued jobs and
// turns started where they were accepted (local-turns.ts) share them, so the process never runs
// more of the agent's turns at once than its limit, however they arrived. A job that finds every
// place taken waits for one while BullMQ keeps renewing its lock; a new task finds none free and
// goes to the queue instead, after a short wait in the same line when its caller waits for the
// turn anyway (TurnQueue.localSlot). Places freed go to waiting jobs first, in order, so a steady stream
// of new tasks never starves the queue.
export class TurnSlots {
  private used = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private limit: number) {}

  /** Whether tryTake would give a place now. */
  hasFree(): boolean {
    return this.waiting.length === 0 && this.used < this.limit;
  }

  /** A place at once, or none: never waits, and never goes ahead of a job that is waiting. */
  tryTake(): boolean {
    if (!this.hasFree()) return false;
    this.used += 1;
    return true;
  }

  /**
   * A place now, or the next one freed within `ms`, in line with the jobs waiting (never ahead of
   * them); false when none came in time, and the line is left.
   */
  takeWithin(ms: number): Promise<boolean> {
    if (this.tryTake()) return Promise.resolve(true);
    if (ms <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const granted = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        const at = this.waiting.indexOf(granted);
        if (at >= 0) this.waiting.splice(at, 1);
        resolve(false);
      }, ms);
      this.waiting.push(granted);
    });
  }

  /** A place, waiting in line for one when all are taken. */
  take(): Promise<void> {
    if (this.tryTake()) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Gives a place back: to the first job waiting, unless the limit was lowered below the places in use. */
  release(): void {
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
