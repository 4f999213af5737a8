// The agents' turn queues as the use cases see them: a bound on what may wait, and the one way
// a stored message's turn is queued. Also the port the store is handed to queue a new task's
// first turn in the same write as its creation (GatewayOperations.createTask, queueFirstTurn).
import type { TraceContext } from '../telemetry/spans.ts';
import { enqueueTurn, type LocalTurnSlot, type LocalTurnStarter, type TurnQueues } from '../../queues/turns.ts';
import { A2AError } from '../protocol/errors.ts';
import { LimitExceededError } from '../limits/limit-refusal.ts';
import { ownerKeyOf, type Owner } from '../store/task-store.ts';

/**
 * The longest a new task whose caller follows its turn (a blocking or streaming send) waits for a
 * place on this process's worker when all are in use, before its turn goes to the queue: only as
 * long as the line moves (a place given back between two looks 50 ms apart; two looks without one
 * and it leaves, TurnSlots.takeWithin). A place is held until its run has wound up, a little after
 * its caller was answered, so a caller's next task often arrives while every place is still held;
 * and under a burst larger than the places, the queue costs each turn far more than its wait in
 * line (with this process's worker alone, a queued turn waits in the same line). It waits once
 * the task is stored and leased (local-turns.ts): a process that dies meanwhile leaves a lease
 * without a job, which the reconciler queues again once it lapses, as for a turn that died running.
 */
export const LOCAL_PLACE_WAIT_MS = 1_000;

/** How long one queue-depth reading is trusted; bounds the cost to one count per interval. */
const QUEUE_DEPTH_TTL_MS = 200;

/** One reading of an agent's queue. */
interface QueueDepth {
  /** Turns waiting to be taken now. */
  ready: number;
  /** Those, plus turns not due yet (deferred, retrying) and coordinators waiting for children: maxQueuedTurns counts these. */
  all: number;
}

export class TurnQueue {
  private readonly depths = new Map<string, { readAtMs: number; depth: Promise<QueueDepth> }>();

  /**
   * `maxQueuedTurns`: new turns of an agent are refused while this many wait in its queue; 0 = no bound.
   * `local`: this process's own workers, when it runs them (src/runtime/local-turns.ts).
   */
  constructor(
    private readonly queues: TurnQueues,
    private readonly maxQueuedTurns: number,
    private readonly local?: LocalTurnStarter,
  ) {}

  /**
   * A place on this process's own worker for a new task's first turn (or a follow-up's turn,
   * startOrEnqueue), when it runs the agent's turns. Decided before a new task is stored, so its
   * job is not added with the create, and before a follow-up is accepted, so the accept can take
   * the turn's lease; the caller starts the turn on it once the message is stored, or releases it.
   * `waitMs`: the longest the turn may wait in line for a place once its task is stored, when all
   * are in use and the line moves (LOCAL_PLACE_WAIT_MS for a caller that follows the turn); 0: a
   * place free now, taken before the create.
   *
   * A turn nobody waits for (0) starts here only while no turn of the agent waits in the queue: it
   * must not go ahead of them, and the queue orders them by their owners' share. A caller that
   * follows its turn waits in this process's line whatever the queue holds, behind the queued
   * turns this process's worker has taken (they wait in the same line, first): sending it to
   * the queue behind a backlog would keep the backlog from ever draining under a load larger
   * than the places (each new task joining it), and every turn would pay the queue's scripts
   * for a wait in the same line. One stall long enough to send a few turns to the queue used to
   * leave 200 streams there for good (docs/performance.md, "A backlog no longer keeps new turns
   * in the queue").
   */
  async localSlot(owner: Owner, taskId: string, waitMs = 0): Promise<LocalTurnSlot | undefined> {
    const { agent } = owner;
    if (this.local === undefined) return undefined;
    if (waitMs > 0) return this.local.take(ownerKeyOf(owner), taskId, waitMs);
    if (!this.local.hasPlace(agent)) return undefined;
    // Unread (Redis trouble): the queue, whose job add goes out with the create and fails with it.
    const queueEmpty = await this.depthOf(agent).then((depth) => depth.ready === 0, () => false);
    return queueEmpty ? this.local.take(ownerKeyOf(owner), taskId, 0) : undefined;
  }

  /**
   * Refuses new work while the agent's queue is over its bound, before anything is stored: an
   * overloaded deployment answers 503 with Retry-After instead of growing without limit.
   */
  async checkDepth(agent: string): Promise<void> {
    const limit = this.maxQueuedTurns;
    if (limit <= 0) return;
    const depth = (await this.depthOf(agent)).all;
    if (depth >= limit) {
      throw new LimitExceededError(
        'maxQueuedTurns',
        'UNAVAILABLE',
        `${depth} turns of agent "${agent}" are waiting for a worker, the limit is ${limit} (maxQueuedTurns); nothing was stored. Retry after the Retry-After delay.`,
        { retryAfterSeconds: 1, httpStatus: 503, metadata: { queuedTurns: String(depth), limit: String(limit) } },
      );
    }
  }

  /** The agent's queue as last read, read again when older than QUEUE_DEPTH_TTL_MS (one script call). */
  private depthOf(agent: string): Promise<QueueDepth> {
    const now = Date.now();
    let reading = this.depths.get(agent);
    if (reading === undefined || now - reading.readAtMs > QUEUE_DEPTH_TTL_MS) {
      const counts = this.queues.of(agent).getJobCounts('waiting', 'prioritized', 'delayed', 'waiting-children');
      const depth = counts.then((c) => {
        const ready = (c['waiting'] ?? 0) + (c['prioritized'] ?? 0);
        return { ready, all: ready + (c['delayed'] ?? 0) + (c['waiting-children'] ?? 0) };
      });
      reading = { readAtMs: now, depth };
      this.depths.set(agent, reading);
      // A failed reading is not kept: the next call reads again.
      depth.catch(() => {
        if (this.depths.get(agent) === reading) this.depths.delete(agent);
      });
    }
    return reading.depth;
  }

  /** `ownerActiveTasks`: the owner's tasks queued or running, the turn's priority (see turnPriority). */
  async enqueue(owner: Owner, taskId: string, contextId: string, turn: number, trace: TraceContext, ownerActiveTasks = 1): Promise<void> {
    try {
      await enqueueTurn(this.queues, { taskId, turn, ownerKey: ownerKeyOf(owner), contextId }, trace, ownerActiveTasks);
    } catch (error) {
      throw new A2AError(
        'UNAVAILABLE',
        `Task ${taskId} is stored but its turn could not be queued (${(error as Error).message}). Send the same message (same messageId) again to retry; it will not start a second turn.`,
        { metadata: { taskId }, retryAfterSeconds: 1, cause: error },
      );
    }
  }

  /**
   * A stored message's turn (a follow-up that opened the task's next turn): started on this
   * process's own worker when localSlot gives a place, as a new task's first turn is, else
   * queued. The run takes the task's lease itself, recorded as carried by no job, so the
   * reconciler queues the turn again should this process die before or during it. `waitMs`: as
   * localSlot's.
   */
  async startOrEnqueue(owner: Owner, taskId: string, contextId: string, turn: number, trace: TraceContext, ownerActiveTasks: number, waitMs: number): Promise<void> {
    const slot = await this.localSlot(owner, taskId, waitMs);
    if (slot === undefined) return this.enqueue(owner, taskId, contextId, turn, trace, ownerActiveTasks);
    slot.start({ data: { taskId, turn, ownerKey: ownerKeyOf(owner), contextId }, trace, ownerActiveTasks });
  }

  /**
   * The store's port for a new task's first turn, given the owner's active tasks. The store calls
   * it right behind the task's create script, on the same connection, so both go out in one
   * write and Redis runs them in that order: the task exists before its job does.
   */
  firstTurnOf(owner: Owner, taskId: string, contextId: string, trace: TraceContext): (ownerActiveTasks: number) => Promise<void> {
    return (active) => this.enqueue(owner, taskId, contextId, 1, trace, active);
  }
}
