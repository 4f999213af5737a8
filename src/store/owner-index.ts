// Step 3 of a task's write (docs/redis-slots.md): the owner's indexes and active set live in the
// owner's slot, so a task's script cannot change them. Each write notes here what the owner's
// slot must learn (the task's new index score; that it left the active set) and the notes are
// written per owner, one ownerIndex script call for every note of one flush interval: the hot
// path pays a fraction of a command per task. The entries are hints: ListTasks re-checks every
// task, a claim at the active-task cap re-checks the owner's active tasks (TaskStore), and the
// reconciler drops what a crashed process never wrote.
import type { RedisClient } from '../redis/connection.ts';
import type { RedisKeys } from './keys.ts';
import type { ScriptRunner } from './scripts.ts';
import { callScript } from './script-call.ts';
import { ownerIndexScript, type ActiveDrop, type OwnerIndexEntry } from './maintenance-scripts.ts';

/**
 * Notes one ownerIndex call writes at most. A busy owner's flush holds thousands (one per task
 * that changed in the interval); one call for all of them held Redis for 10–20 ms, every other
 * caller waiting behind it.
 */
export const NOTES_PER_CALL = 256;

interface OwnerNote {
  contextId: string;
  /** Newest index score (ms) noted; 0 = only an active-set drop. */
  atMs: number;
  /** The task left the active set at this time (ms), when it did. */
  leftActiveAtMs?: number;
}

export class OwnerIndex {
  private static readonly instances = new Set<WeakRef<OwnerIndex>>();
  /** The shared index of each key prefix in this process (see shared()). */
  private static readonly byPrefix = new Map<string, WeakRef<OwnerIndex>>();
  /** Connections (with their scripts) the index may write with: the first one ready is used. */
  private readonly connections = new Map<RedisClient, ScriptRunner>();
  private pending = new Map<string, Map<string, OwnerNote>>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    redis: RedisClient,
    run: ScriptRunner,
    private readonly keys: RedisKeys,
    private readonly flushIntervalMs: number,
  ) {
    this.connections.set(redis, run);
    OwnerIndex.instances.add(new WeakRef(this));
  }

  /**
   * The one index of a key prefix in this process: the gateway and the workers of one process
   * write their notes together, and a ListTasks here sees what this process's workers noted.
   */
  static shared(redis: RedisClient, run: ScriptRunner, keys: RedisKeys, flushIntervalMs: number): OwnerIndex {
    let index = OwnerIndex.byPrefix.get(keys.prefix)?.deref();
    if (index === undefined) {
      index = new OwnerIndex(redis, run, keys, flushIntervalMs);
      OwnerIndex.byPrefix.set(keys.prefix, new WeakRef(index));
    } else {
      index.connections.set(redis, run);
    }
    return index;
  }

  /** A ready connection's script runner, if any. */
  private get ready(): ScriptRunner | undefined {
    for (const [connection, run] of this.connections) if (connection.status === 'ready') return run;
    return undefined;
  }

  /** flush(), waiting at most `timeoutMs` for it (at shutdown: hints are not worth a hang). */
  async flushWithin(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.flush(), new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  }

  /** Writes what every owner index of this process noted (RecentTaskIndex.flushAll calls it too). */
  static async flushAll(): Promise<void> {
    const flushes: Promise<void>[] = [];
    for (const ref of OwnerIndex.instances) {
      const index = ref.deref();
      if (index === undefined) OwnerIndex.instances.delete(ref);
      else flushes.push(index.flush());
    }
    await Promise.all(flushes);
  }

  /**
   * Notes that a task's status changed at `atMs` (0: it did not), and with `leftActiveAtMs` that
   * from then on no turn of it is queued or running. Written within the flush interval; never throws.
   */
  note(ownerKey: string, taskId: string, contextId: string, atMs: number, leftActiveAtMs?: number): void {
    let owner = this.pending.get(ownerKey);
    if (owner === undefined) this.pending.set(ownerKey, (owner = new Map()));
    const known = owner.get(taskId);
    const note: OwnerNote = known ?? { contextId, atMs: 0 };
    if (atMs >= note.atMs) {
      note.atMs = atMs;
      note.contextId = contextId;
    }
    if (leftActiveAtMs !== undefined) note.leftActiveAtMs = Math.max(note.leftActiveAtMs ?? 0, leftActiveAtMs);
    owner.set(taskId, note);
    if (this.timer === undefined) {
      this.timer = setTimeout(() => void this.flush(), this.flushIntervalMs);
      this.timer.unref();
    }
  }

  /** Writes the notes of one owner now (before a read of its indexes or active set in this process). */
  flushOwner(ownerKey: string): Promise<void> {
    const notes = this.pending.get(ownerKey);
    if (notes === undefined) return this.flushing;
    this.pending.delete(ownerKey);
    return this.write(new Map([[ownerKey, notes]]));
  }

  /** Writes every note; a failed write keeps its notes for the next flush (newest wins). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.size === 0) return this.flushing;
    const batch = this.pending;
    this.pending = new Map();
    return this.write(batch);
  }

  /** Drops active-set entries whose score is still at most the given one (ms): a task that became active since keeps its entry. */
  async dropActive(ownerKey: string, entries: readonly { taskId: string; maxScore: number }[]): Promise<number> {
    if (entries.length === 0) return 0;
    const run = this.ready ?? ([...this.connections.values()][0] as ScriptRunner);
    const reply = await callScript(run, ownerIndexScript, { ...this.ownerKeys(ownerKey), contextTasks: [] }, { entries: [], drops: entries });
    return reply.dropped;
  }

  private write(batch: Map<string, Map<string, OwnerNote>>): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      // Redis away: the notes wait for a later flush, so neither a flush nor a shutdown waits for it.
      const run = this.ready;
      if (run === undefined) {
        if ([...this.connections.keys()].some((connection) => connection.status !== 'end')) this.keep(batch);
        return;
      }
      await Promise.all(
        [...batch].map(async ([ownerKey, notes]) => {
          try {
            await this.writeNotes(run, ownerKey, notes);
          } catch {
            // Redis is away: keep the notes for the next flush rather than lose them.
            this.keep(new Map([[ownerKey, notes]]));
          }
        }),
      );
    });
    return this.flushing;
  }

  private keep(batch: Map<string, Map<string, OwnerNote>>): void {
    for (const [ownerKey, notes] of batch) for (const [taskId, note] of notes) this.note(ownerKey, taskId, note.contextId, note.atMs, note.leftActiveAtMs);
  }

  private ownerKeys(ownerKey: string): { ownerTasks: string; ownerActiveTasks: string } {
    return { ownerTasks: this.keys.ownerTasks(ownerKey), ownerActiveTasks: this.keys.ownerActiveTasks(ownerKey) };
  }

  /**
   * The owner's notes in ownerIndex calls of at most NOTES_PER_CALL notes each: each context index
   * once per call, after the two named keys.
   */
  private async writeNotes(run: ScriptRunner, ownerKey: string, notes: Map<string, OwnerNote>): Promise<void> {
    const calls: Promise<unknown>[] = [];
    let contextTasks: string[] = [];
    let contextAt = new Map<string, number>();
    let entries: OwnerIndexEntry[] = [];
    let drops: ActiveDrop[] = [];
    let inCall = 0;
    const send = (): void => {
      calls.push(callScript(run, ownerIndexScript, { ...this.ownerKeys(ownerKey), contextTasks }, { entries, drops }));
      contextTasks = [];
      contextAt = new Map();
      entries = [];
      drops = [];
      inCall = 0;
    };
    for (const [taskId, note] of notes) {
      if (note.atMs > 0) {
        let at = contextAt.get(note.contextId);
        if (at === undefined) {
          contextTasks.push(this.keys.ownerContextTasks(ownerKey, note.contextId));
          at = ownerIndexScript.keys.length + contextTasks.length;
          contextAt.set(note.contextId, at);
        }
        entries.push({ taskId, atMs: note.atMs, contextKey: at });
      }
      if (note.leftActiveAtMs !== undefined) drops.push({ taskId, maxScore: note.leftActiveAtMs });
      if (++inCall === NOTES_PER_CALL) send();
    }
    if (inCall > 0) send();
    await Promise.all(calls);
  }
}
