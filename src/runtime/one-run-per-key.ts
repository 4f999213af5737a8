/**
 * Runs at most one function per key at a time in this process: a run for a key that is still
 * running waits for the earlier one to end (its failure included) and then runs. The worker
 * keys it twice: by job id, for a job BullMQ delivers again while this process still runs it,
 * and by task id, for a coordinator's wake job that arrives while its parking run finishes.
 */
export class OneRunPerKey {
  private readonly runs = new Map<string, Promise<void>>();

  /** `onWait` is told when this run has to wait for an earlier one of the same key. */
  async run(key: string, fn: () => Promise<void>, onWait?: () => void): Promise<void> {
    const earlier = this.runs.get(key);
    const run = (async () => {
      if (earlier !== undefined) {
        onWait?.();
        await earlier.catch(() => undefined);
      }
      await fn();
    })();
    this.runs.set(key, run);
    try {
      await run;
    } finally {
      if (this.runs.get(key) === run) this.runs.delete(key);
    }
  }
}
