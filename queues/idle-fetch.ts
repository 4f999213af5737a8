// How long an idle BullMQ worker blocks on its queue's marker before it asks again. A job added
// (or a delayed job coming due, or a retry) writes the marker, which wakes the blocked worker at
// once: this bounds only the cost of an idle worker (one blocking wait and one fetch per
// interval), never the latency of new work. BullMQ's own default, 5 s, costs three workers of an
// idle process more than a Redis call a second; 30 s costs them one every five seconds.
// A blocking wait that a reconnect left hanging is abandoned by BullMQ's watchdog one second
// after this interval.
export const IDLE_DRAIN_DELAY_SECONDS = 30;

/** The parts of BullMQ's worker loop (6.x) that startWokenJobsAtOnce reads and steers. */
interface WorkerLoop {
  _getNextJob?: (token: string, options?: { block?: boolean }) => Promise<unknown>;
  drained?: boolean;
  waiting?: unknown;
  limitUntil?: number;
  mainLoopQueue?: { numTotal(): number } | null;
}

/**
 * Starts a job a blocking wait woke the worker for without first asking for another one.
 * BullMQ's worker loop fetches in sequence until a fetch comes back empty and only then starts
 * what it fetched: a worker idle on its queue's marker, woken for one new turn, asked Redis once
 * more (and found nothing) before running it, a round trip on the path of every turn of a quiet
 * gateway. When the woken job is the only one the worker holds, the next fetch is a blocking wait
 * instead, which BullMQ runs beside the job: the fetch of the woken job set the queue's marker
 * again (BullMQ does on every fetch), so that wait returns at once and asks for the next job
 * while the turn runs; a busy worker (other jobs held) fetches as BullMQ does. Works on BullMQ's
 * loop internals (the version is pinned); where they are not there, it changes nothing.
 * test/round-trips.test.ts counts the fetches per task.
 */
export function startWokenJobsAtOnce(worker: object): void {
  const loop = worker as WorkerLoop;
  const fetch = loop._getNextJob;
  if (typeof fetch !== 'function' || typeof loop.drained !== 'boolean' || !('mainLoopQueue' in loop)) return;
  let woken = false;
  loop._getNextJob = async (token, options) => {
    const blockingAllowed = options?.block !== false;
    if (woken && blockingAllowed && loop.mainLoopQueue?.numTotal() === 1) loop.drained = true;
    const waits = blockingAllowed && loop.drained === true && loop.waiting == null && !(Number(loop.limitUntil) > 0);
    woken = false;
    const job = await fetch.call(worker, token, options);
    woken = waits && job !== undefined && job !== null;
    return job;
  };
}
