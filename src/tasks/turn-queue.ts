// The agents' turn queues as the use cases see them: a bound on what may wait, and the one way
// a stored message's turn is queued. Also the port the store is handed to queue a new task's
// first turn in the same write as its creation (GatewayOperations.createTask, queueFirstTurn).
import type { TraceContext } from '../telemetry/spans.ts';
import { enqueueTurn, type LocalTurnSlot, type LocalTurnStarter, type TurnQueues } from '../../queues/turns.ts';
import { A2AError } from '../protocol/errors.ts';
import { LimitExceededError } from '../limits/limit-refusal.ts';
import { ownerKeyOf, type Owner } from '../store/task-store.ts';

/** How long one queue-depth reading is trusted; bounds the cost to one count per interval. */
const QUEUE_DEPTH_TTL_MS = 200;

export class TurnQueue {
  private readonly depths = new Map<string, { readAtMs: number; depth: Promise<number> }>();

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
   * A place on this process's worker for a new task's first turn, taken before the task is
   * stored (a task whose turn starts here adds no job with its create); given back unless a turn
   * is started on it.
   */
  localSlot(agent: string): LocalTurnSlot | undefined {
    return this.local?.take(agent);
  }

  /**
   * Refuses new work while the agent's queue is over its bound, before anything is stored: an
   * overloaded deployment answers 503 with Retry-After instead of growing without limit.
   */
  async checkDepth(agent: string): Promise<void> {
    const limit = this.maxQueuedTurns;
    if (limit <= 0) return;
    const now = Date.now();
    let reading = this.depths.get(agent);
    if (reading === undefined || now - reading.readAtMs > QUEUE_DEPTH_TTL_MS) {
      reading = { readAtMs: now, depth: this.queues.of(agent).count() };
      this.depths.set(agent, reading);
    }
    const depth = await reading.depth;
    if (depth >= limit) {
      throw new LimitExceededError(
        'maxQueuedTurns',
        'UNAVAILABLE',
        `${depth} turns of agent "${agent}" are waiting for a worker, the limit is ${limit} (maxQueuedTurns); nothing was stored. Retry after the Retry-After delay.`,
        { retryAfterSeconds: 1, httpStatus: 503, metadata: { queuedTurns: String(depth), limit: String(limit) } },
      );
    }
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
   * The store's port for a new task's first turn, given the owner's active tasks. The store calls
   * it right behind the task's create script, on the same connection, so both go out in one
   * write and Redis runs them in that order: the task exists before its job does.
   */
  firstTurnOf(owner: Owner, taskId: string, contextId: string, trace: TraceContext): (ownerActiveTasks: number) => Promise<void> {
    return (active) => this.enqueue(owner, taskId, contextId, 1, trace, active);
  }
}
