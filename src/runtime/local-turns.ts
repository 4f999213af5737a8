// A new task's first turn, or the turn a follow-up message opened (TurnQueue.startOrEnqueue),
// started in the process that accepted the message when that process also runs the agent's turns
// and has a free place for one (localTurns, on by default). The queue is
// for turns that have to wait, or that another process has to take over; a turn that can start
// at once where it arrived skips the job's add, its fetch, the worker's next look and its
// completion: two round trips off the caller's path and four queue scripts off Redis.
// A caller that follows its turn (a blocking or streaming send) waits for a place when all are in
// use, as long as the line moves (TurnQueue.localSlot, LOCAL_PLACE_WAIT_MS,
// TurnSlots.takeWithin): a place is held until its run has wound up, a little after its caller
// was answered, and the caller's next task would otherwise go to the queue, which costs far more
// than the wait and, with this process's worker alone, waits in the same line. It waits once its
// task is stored, not before: a place held across the create's round trip runs no turn (under 200
// streams that was 7.5 of the 18 ms a place was held). A line found standing still sends the turn
// to the queue with the create; one that stops moving while the turn waits sends it there after,
// the create's lease given back as an undone attempt.
//
// On a single Redis the create takes the turn's lease too (createTask's takeLease), and so does the
// accept of a follow-up that resumes its task (acceptMessage's): the run starts under it, one
// script and one round trip fewer. The turn is registered for cancels before that call
// (TurnRunner.reserve), so a cancel that follows it reaches the run; a run that
// cannot start after all (the owner's running share full) gives the lease back, its attempt undone.
//
// What the job would have given, this keeps. The task and its message are stored before the turn
// starts (the gateway starts it only after the create script answered). The turn runs under the
// task's lease like any other, so a job for the same turn (a re-sent message, the reconciler)
// finds the lease held or the turn over and changes nothing. A run that stops without ending the
// turn's handling (shutdown's hand-back, a lease still held, the owner's running share full,
// Redis trouble) puts the turn in the queue, where the job retries as any other. And if the
// process dies mid-turn, no stall detection will notice: the lease records that no job carries
// the run (turnWithoutJob), and once it has lapsed the reconciler queues the turn again
// (reconcileIntervalMs, once the task has been quiet for lockDurationMs / 2).
import { enqueueTurn, turnJobId, withTrace, type LocalTurn, type LocalTurnSlot, type LocalTurnStarter, type TurnQueues } from '../../queues/turns.ts';
import type { Logger } from '../logging/logger.ts';
import { ownerFromKey } from '../store/task-store.ts';
import { LeaseHeldError, TurnDeferredError, TurnHandedBackError, type ReservedTurn, type TurnRunner } from './turn-runner.ts';
import type { TurnSlots } from './turn-slots.ts';

export class LocalTurns implements LocalTurnStarter {
  private stopped = false;
  private readonly runs = new Set<Promise<void>>();

  constructor(
    private readonly runner: TurnRunner,
    /** The places of an agent whose turns this process runs; undefined for any other agent. */
    private readonly slotsOf: (agent: string) => TurnSlots | undefined,
    private readonly queues: TurnQueues,
    private readonly logger: Logger,
  ) {}

  hasPlace(agent: string): boolean {
    return !this.stopped && (this.slotsOf(agent)?.hasFree() ?? false);
  }

  async take(ownerKey: string, taskId: string, waitMs: number): Promise<LocalTurnSlot | undefined> {
    const slots = this.stopped ? undefined : this.slotsOf(ownerFromKey(ownerKey).agent);
    if (slots === undefined) return undefined;
    // A caller that follows its turn takes its place once the task is stored, not before: a
    // place held across the create's round trip is a place no turn runs in (under load, most of
    // the time a short turn holds one). With the line standing still (long turns in every place)
    // it would wait in vain, then hand the lease back and queue the turn: the queue at once costs less.
    const placeFirst = waitMs <= 0;
    if (placeFirst ? !slots.tryTake() : !slots.moving()) return undefined;
    // Registered before the create, which takes the lease on these terms (undefined on a Cluster).
    const reserved = this.runner.reserve(taskId, ownerKey);
    let held = true;
    return {
      leaseTerms: reserved?.terms,
      start: (turn) => {
        if (!held) throw new Error('a place for a local turn was used twice');
        held = false;
        this.track(placeFirst ? this.runIn(slots, turn, reserved, 0) : this.placeThenRun(slots, waitMs, turn, reserved));
      },
      release: () => {
        if (!held) return;
        held = false;
        reserved?.cancel();
        if (placeFirst) slots.release();
      },
    };
  }

  /** Takes no more turns; waits for those running (the shutdown's grace, then hand-back, ends them). */
  async stop(): Promise<void> {
    this.stopped = true;
    while (this.runs.size > 0) await Promise.all([...this.runs]);
  }

  private track(run: Promise<void>): void {
    this.runs.add(run);
    void run.finally(() => this.runs.delete(run));
  }

  /**
   * Waits in line for a place, the task stored and its lease taken meanwhile; the line is bounded
   * as it was before the create (TurnSlots.takeWithin). No place, or stopping meanwhile: the lease
   * goes back as an undone attempt and the turn to the queue, where its job carries it.
   */
  private async placeThenRun(slots: TurnSlots, waitMs: number, turn: LocalTurn, reserved: ReservedTurn | undefined): Promise<void> {
    const joined = performance.now();
    const placed = await slots.takeWithin(waitMs);
    // The wait in line is this turn's queue wait (a2a_queue_wait_seconds), as a job's in the queue is.
    if (placed && !this.stopped) return this.runIn(slots, turn, reserved, performance.now() - joined);
    if (placed) slots.release();
    reserved?.cancel();
    await this.runner.giveBackUnstartedLease(turn.data.taskId, turn.lease);
    await this.queueAfter(turn, new NoPlaceError(turn.data.taskId, this.stopped));
  }

  private async runIn(slots: TurnSlots, turn: LocalTurn, reserved: ReservedTurn | undefined, waitedMs: number): Promise<void> {
    try {
      await this.run(turn, reserved, waitedMs);
    } finally {
      slots.release();
    }
  }

  private async run(turn: LocalTurn, reserved: ReservedTurn | undefined, waitedMs: number): Promise<void> {
    const data = withTrace(turn.data, turn.trace);
    try {
      await this.runner.process({
        data,
        jobId: turnJobId(data.taskId, data.turn),
        waitedMs,
        withoutJob: true,
        ...(reserved === undefined ? {} : { reserved: { turn: reserved.turn, lease: turn.lease } }),
      });
    } catch (error) {
      await this.queueAfter(turn, error as Error);
    }
  }

  /** The turn goes to the queue: its job carries it from here as it carries any other. */
  private async queueAfter(turn: LocalTurn, error: Error): Promise<void> {
    const { taskId, turn: turnNumber } = turn.data;
    const fields = { taskId, turn: turnNumber, reason: error.message };
    // Shutdown, a duplicate run or the owner's share are everyday reasons; anything else is trouble.
    if (error instanceof TurnHandedBackError || error instanceof TurnDeferredError || error instanceof LeaseHeldError || error instanceof NoPlaceError) this.logger.debug('a turn started where it was accepted goes to the queue', fields);
    else this.logger.warn('a turn started where it was accepted stopped short; it goes to the queue', fields);
    try {
      await enqueueTurn(this.queues, turn.data, turn.trace, turn.ownerActiveTasks);
    } catch (queueError) {
      this.logger.warn(`turn ${turnNumber} of task ${taskId} could not be queued after its run here stopped; the reconciler will queue it once the task has been quiet`, {
        taskId,
        error: (queueError as Error).message,
      });
    }
  }
}

/** Why a turn whose task was stored for a run here went to the queue before it started. */
class NoPlaceError extends Error {
  constructor(taskId: string, stopping: boolean) {
    super(
      stopping
        ? `Turn of task ${taskId} queued before it started: this process is shutting down; another worker runs it.`
        : `Turn of task ${taskId} queued before it started: no place on this worker came free while it waited in line (LOCAL_PLACE_WAIT_MS, or the line stood still); the queue's next free worker runs it.`,
    );
    this.name = 'NoPlaceError';
  }
}
