// The writes of one turn's run, in the order the adapter made them even when it does not await
// each call. The first failure (a stale lease, an output bound) stops every later write: each
// one queued after it fails with the same error, so a run cannot store past the point where the
// store refused it.

export class TurnWriteQueue {
  private writes: Promise<void> = Promise.resolve();
  private writeError: Error | undefined;

  /** Queues `write`; its promise settles with this write's own outcome. */
  enqueue(write: () => Promise<void>): Promise<void> {
    const next = this.writes.then(async () => {
      if (this.writeError !== undefined) throw this.writeError;
      try {
        await write();
      } catch (error) {
        this.writeError ??= error as Error;
        throw error;
      }
    });
    // Keep the chain alive for later writes; the caller still sees this write's failure.
    this.writes = next.catch(() => undefined);
    return next;
  }

  /** Queues a call whose result the caller needs (a read ordered after the writes before it). */
  enqueueValue<T>(read: () => Promise<T>): Promise<T> {
    let result: T | undefined;
    return this.enqueue(async () => {
      result = await read();
    }).then(() => result as T);
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
