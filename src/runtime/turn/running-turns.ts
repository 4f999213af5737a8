// The turns running in this process, and what stops them: a cancel request, an interrupt (input
// policy interrupt) or this worker's shutdown, each aborting the adapter's signal with its reason.
import { taskCanceled, TURN_INTERRUPTED, WORKER_SHUTDOWN } from '../../../adapters/abort-reasons.ts';
import { isCluster, type RedisClient } from '../../redis/connection.ts';
import type { TaskChannels } from '../../store/channels.ts';

export interface RunningTurn {
  /** The agent whose turn this is (a2a_active_turns). */
  agent: string;
  /** Aborts the current turn's adapter; a fresh one for each turn the job runs. */
  controller: AbortController;
  /** The turn running now (known once its lease is taken). */
  turn: number | undefined;
  /** Records that this worker saw a cancel or interrupt request (set once the turn's context exists). */
  acknowledge: ((interruptedTurn?: number) => void) | undefined;
  /** On a Cluster, the connection this task's cancel channel is SSUBSCRIBEd on while it runs. */
  readonly cancels: RedisClient | undefined;
  /** False while a turn registered ahead of its run (a new task's first, before its create: LocalTurns) still waits for a place: not counted as running. */
  inPlace: boolean;
}

export class RunningTurns {
  /** By task id. */
  private readonly turns = new Map<string, RunningTurn>();
  /** Set on a Cluster: the connection each running task's cancel channel is SSUBSCRIBEd on. */
  private cancelSubscriber: RedisClient | undefined;
  /** Set by handBackAll: a turn a job goes on to is handed back too. */
  private shuttingDown = false;

  constructor(private readonly channels: TaskChannels) {}

  /**
   * Subscribes to cancel requests ("<taskId>") and interrupts ("<taskId> <turn>"): whichever
   * worker process runs the turn sees them. An interrupt stops only the turn it names, never a
   * later one the same job went on to. On a single Redis one channel carries every task's; on a
   * Cluster (sharded pub/sub, in the task's slot) each turn's task is subscribed while it runs.
   */
  async listenForCancels(subscriber: RedisClient): Promise<void> {
    const { channels } = this;
    const sharded = isCluster(subscriber);
    const onCancel = (channel: string, message: string): void => {
      const [taskId = '', turnText] = message.split(' ');
      if (channel !== (sharded ? channels.taskCancelChannel(taskId) : channels.cancelChannel())) return;
      const turn = this.turns.get(taskId);
      if (turn === undefined) return;
      if (turnText === undefined) {
        turn.controller.abort(taskCanceled());
        turn.acknowledge?.();
        return;
      }
      if (turn.turn !== Number(turnText) || turn.controller.signal.aborted) return;
      turn.controller.abort(TURN_INTERRUPTED);
      turn.acknowledge?.(turn.turn);
    };
    if (sharded) {
      subscriber.on('smessage', onCancel);
      this.cancelSubscriber = subscriber;
      return;
    }
    subscriber.on('message', onCancel);
    await subscriber.subscribe(channels.cancelChannel());
  }

  /** On a Cluster: each running task's cancel channel is subscribed of its own (watchCancels). */
  get sharded(): boolean {
    return this.cancelSubscriber !== undefined;
  }

  /**
   * Registers a job's turn before its lease is taken, so a cancel published right after is not
   * missed (one published before is in the lease's reply), and before its running slot is
   * taken, so a shutdown meanwhile hands it back.
   */
  register(taskId: string, agent: string, inPlace = true): RunningTurn {
    const turn: RunningTurn = { agent, controller: new AbortController(), turn: undefined, acknowledge: undefined, cancels: this.cancelSubscriber, inPlace };
    this.turns.set(taskId, turn);
    return turn;
  }

  /** Whether a turn of the task is registered here (running, or reserved for a run about to start). */
  has(taskId: string): boolean {
    return this.turns.has(taskId);
  }

  /** On a Cluster, subscribes the task's own cancel channel for as long as its turn is registered. */
  async watchCancels(taskId: string, turn: RunningTurn): Promise<void> {
    await turn.cancels?.ssubscribe(this.channels.taskCancelChannel(taskId));
  }

  /** The job goes on to its next turn, which gets a signal of its own: an interrupt of the last one must not reach it. */
  nextTurn(turn: RunningTurn): void {
    turn.controller = new AbortController();
    turn.turn = undefined;
    if (this.shuttingDown) turn.controller.abort(WORKER_SHUTDOWN);
  }

  /** The job ended: its turn leaves the registry (unless a later job of the task took its place). */
  unregister(taskId: string, turn: RunningTurn): void {
    if (this.turns.get(taskId) !== turn) return;
    this.turns.delete(taskId);
    turn.cancels?.sunsubscribe(this.channels.taskCancelChannel(taskId)).catch(() => undefined);
  }

  /** Turns running now: not those still waiting for a place. */
  get size(): number {
    let running = 0;
    for (const turn of this.turns.values()) if (turn.inPlace) running += 1;
    return running;
  }

  /** The turns running now, by agent. */
  byAgent(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const turn of this.turns.values()) if (turn.inPlace) counts.set(turn.agent, (counts.get(turn.agent) ?? 0) + 1);
    return counts;
  }

  /**
   * Stops every running turn without deciding it: each adapter sees its abort signal, the
   * lease is released and the job goes back to the queue, so another worker continues the
   * turn at once instead of after a stall timeout.
   */
  handBackAll(): number {
    this.shuttingDown = true;
    for (const turn of this.turns.values()) turn.controller.abort(WORKER_SHUTDOWN);
    return this.turns.size;
  }
}
