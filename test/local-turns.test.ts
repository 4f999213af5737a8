// A new task's first turn starts on the accepting process's own worker when a place is free
// (src/runtime/local-turns.ts): no queue job carries it. What the job gave must still hold: the
// process never runs more of an agent's turns than its workerConcurrency, however they arrived;
// a turn handed back at shutdown goes to the queue and another worker continues it; and a turn
// whose process dies mid-run is queued again by the reconciler (invariant 3: attempts carried).
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { TurnQueues, turnJobId, type LocalTurn, type LocalTurnSlot, type LocalTurnStarter } from '../queues/turns.ts';
import { LOCAL_PLACE_WAIT_MS, TurnQueue } from '../src/tasks/turn-queue.ts';
import type { Task } from '../src/protocol/types.ts';
import { ownerKeyOf, type TurnRecord } from '../src/store/task-store.ts';
import { queueWait } from '../src/telemetry/metrics.ts';
import { spawnGatewayProcess, type GatewayProcess } from './support/gateway-process.ts';
import { openSse, sendStreamingRequest } from './support/sse.ts';
import { openTestRedis, rpc, spawnWorkerProcess, startTestGateway, stopWorkerProcesses, textMessage, uniquePrefix, waitFor, deletePrefix, type TestGateway, type WorkerProcess } from './support/harness.ts';

const redis = openTestRedis();
const gateways: TestGateway[] = [];
const processes: GatewayProcess[] = [];
const workers: WorkerProcess[] = [];

afterEach(async () => {
  for (const child of processes.splice(0)) {
    child.kill('SIGKILL');
    await child.exited;
  }
  await stopWorkerProcesses(workers.splice(0));
  for (const gw of gateways.splice(0)) await gw.close();
}, 60_000);

afterAll(async () => {
  await redis.quit();
});

async function send(url: string, text: string): Promise<string> {
  const { body } = await rpc(`${url}/a2a/jsonrpc`, 'SendMessage', { message: textMessage(text), configuration: { returnImmediately: true } });
  expect(body.error).toBeUndefined();
  return (body.result as { task: Task }).task.id;
}

async function stateOf(prefix: string, taskId: string): Promise<string | null> {
  return redis.hget(`${prefix}:{${taskId}}:task`, 'state');
}

/** The seconds a2a_queue_wait_seconds has summed in this process so far (every gateway of this file shares it). */
async function queueWaitSeconds(): Promise<number> {
  const { values } = await queueWait.get();
  return values.filter((sample) => sample.metricName === 'a2a_queue_wait_seconds_sum').reduce((total, sample) => total + sample.value, 0);
}

const turnRecord = async (prefix: string, taskId: string): Promise<TurnRecord> => JSON.parse((await redis.hget(`${prefix}:{${taskId}}:turns`, '1')) as string) as TurnRecord;

/** The job ids the turn queue's event stream saw added (BullMQ writes an "added" event for each job). */
async function addedJobs(prefix: string): Promise<string[]> {
  const entries = await redis.xrange(`${prefix}:turns-default:events`, '-', '+');
  return entries.flatMap(([, fields]) => {
    const at = (name: string): string | undefined => fields[fields.indexOf(name) + 1];
    return at('event') === 'added' ? [at('jobId') ?? ''] : [];
  });
}

describe('a new task whose agent this process runs', () => {
  it('runs its first turn here, without a queue job', async () => {
    const gw = await startTestGateway({ name: 'local-turns' });
    gateways.push(gw);
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo here') });
    const task = (body.result as { task: Task }).task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(await addedJobs(gw.prefix)).toEqual([]);
    expect((await turnRecord(gw.prefix, task.id)).workerId).toBe(gw.worker?.runner.workerId);
  });

  it('runs the turn a follow-up opens here too (an answer to its question), without a queue job; its lease carried by no job', async () => {
    const gw = await startTestGateway({ name: 'local-turns-follow-up' });
    gateways.push(gw);
    const asked = (await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('dialogue') })).body.result as { task: Task };
    expect(asked.task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const answer = { ...textMessage('Ada'), taskId: asked.task.id, contextId: asked.task.contextId };
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: answer });
    const task = (body.result as { task: Task }).task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(await addedJobs(gw.prefix)).toEqual([]);
    const second = JSON.parse((await redis.hget(`${gw.prefix}:{${task.id}}:turns`, '2')) as string) as TurnRecord;
    expect(second).toMatchObject({ attempts: 1, workerId: gw.worker?.runner.workerId, outcome: 'TASK_STATE_COMPLETED' });
    // Its lease said no job carried it: had this process died, the reconciler would have queued it.
    expect(await redis.hget(`${gw.prefix}:{${task.id}}:task`, 'turnWithoutJob')).toBe('1');
  });

  it('runs a follow-up sent twice at once (same messageId) one time: one turn, one attempt, one answer', async () => {
    const gw = await startTestGateway({ name: 'local-turns-follow-up-twice' });
    gateways.push(gw);
    const asked = (await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('dialogue') })).body.result as { task: Task };
    const answer = { ...textMessage('Ada'), taskId: asked.task.id, contextId: asked.task.contextId };
    const both = await Promise.all([rpc(gw.jsonRpcUrl, 'SendMessage', { message: answer }), rpc(gw.jsonRpcUrl, 'SendMessage', { message: answer })]);
    for (const { body } of both) expect((body.result as { task: Task }).task).toMatchObject({ id: asked.task.id, status: { state: 'TASK_STATE_COMPLETED' } });
    const taskKey = `${gw.prefix}:{${asked.task.id}}`;
    expect(await redis.hget(`${taskKey}:task`, 'turn')).toBe('2');
    expect(JSON.parse((await redis.hget(`${taskKey}:turns`, '2')) as string)).toMatchObject({ attempts: 1, outcome: 'TASK_STATE_COMPLETED' });
    // The question, then one greeting: a second run of turn 2 would have answered twice.
    const agentMessages = (await redis.lrange(`${taskKey}:history`, 0, -1)).filter((entry) => entry.includes('"ROLE_AGENT"'));
    expect(agentMessages).toHaveLength(2);
  });

  it('queues the turn a follow-up opens with localTurns off', async () => {
    const gw = await startTestGateway({ name: 'local-turns-follow-up-off', config: { localTurns: false } });
    gateways.push(gw);
    const asked = (await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('dialogue') })).body.result as { task: Task };
    const answer = { ...textMessage('Ada'), taskId: asked.task.id, contextId: asked.task.contextId };
    const task = ((await rpc(gw.jsonRpcUrl, 'SendMessage', { message: answer })).body.result as { task: Task }).task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(await addedJobs(gw.prefix)).toEqual([turnJobId(task.id, 1), turnJobId(task.id, 2)]);
  });

  it('goes through the queue with localTurns off', async () => {
    const gw = await startTestGateway({ name: 'local-turns-off', config: { localTurns: false } });
    gateways.push(gw);
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo queued') });
    const task = (body.result as { task: Task }).task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(await addedJobs(gw.prefix)).toEqual([turnJobId(task.id, 1)]);
  });

  it('shares the agent\'s places with queued jobs: never more turns at once than workerConcurrency', async () => {
    const gw = await startTestGateway({ name: 'local-turns-places', config: { workerConcurrency: 2 }, adapterOptions: { stepMs: 30 } });
    gateways.push(gw);
    const runner = gw.worker?.runner;
    let most = 0;
    const sample = setInterval(() => {
      most = Math.max(most, runner?.runningTurns() ?? 0);
    }, 2);
    try {
      // Two take the places here; the third finds none and is queued, and the worker, with no job
      // active, takes it at once: it must wait for a place, not run beside the two.
      const ids = [await send(gw.url, 'long 10'), await send(gw.url, 'long 10'), await send(gw.url, 'long 10')];
      expect(await addedJobs(gw.prefix)).toEqual([turnJobId(ids[2] as string, 1)]);
      for (const id of ids) await waitFor(async () => ((await stateOf(gw.prefix, id)) === 'TASK_STATE_COMPLETED' ? true : undefined), 30_000, `task ${id} to complete`);
    } finally {
      clearInterval(sample);
    }
    expect(most).toBe(2);
  });
});

describe('a new task that finds every place of this process in use', () => {
  const holder = ownerKeyOf({ agent: 'default', tenant: '', subject: 'holder' });

  /**
   * A gateway of one place, held as by a run winding up after its caller was answered. With
   * `freeOnAsk`, the line has just moved when the next new task asks (the place given back and
   * taken again, as by one run ending and the next starting), and the place is freed 10 ms later:
   * well within the wait that new task has once its create answered.
   */
  async function onePlaceHeld(name: string, freeOnAsk: boolean, config: Record<string, unknown> = {}, adapterOptions?: Record<string, unknown>): Promise<{ gw: TestGateway; release: () => void }> {
    const gw = await startTestGateway({ name, config: { workerConcurrency: 1, ...config }, ...(adapterOptions === undefined ? {} : { adapterOptions }) });
    gateways.push(gw);
    const local = gw.worker?.localTurns;
    if (local === undefined) throw new Error('the test gateway runs a worker');
    const take = local.take.bind(local);
    const takeHeld = async (): Promise<LocalTurnSlot> => {
      const slot = await take(holder, 'held-task', 0);
      if (slot === undefined) throw new Error('the one place was not free');
      return slot;
    };
    let held = await takeHeld();
    let freed: NodeJS.Timeout | undefined;
    if (freeOnAsk) {
      local.take = async (ownerKey, taskId, waitMs) => {
        held.release();
        held = await takeHeld();
        const slot = await take(ownerKey, taskId, waitMs);
        const place = held;
        freed = setTimeout(() => place.release(), 10);
        return slot;
      };
    }
    return {
      gw,
      release: () => {
        clearTimeout(freed);
        held.release();
      },
    };
  }

  /**
   * Has the next new task's turn wait in line once its create answered: the line moves at its ask
   * (the one place given back and taken again, as by one run ending and the next starting), and
   * `inLine` runs once the turn has joined the line, with that place, to free when it likes.
   */
  function waitInLineNext(gw: TestGateway, release: () => void, inLine: (taskId: string, place: LocalTurnSlot) => void): void {
    const local = gw.worker?.localTurns;
    if (local === undefined) throw new Error('the test gateway runs a worker');
    const take = local.take.bind(local);
    local.take = async (ownerKey, taskId, waitMs) => {
      release();
      const again = await take(holder, 'held-task', 0);
      const slot = await take(ownerKey, taskId, waitMs);
      if (slot === undefined || again === undefined) return undefined;
      return {
        leaseTerms: slot.leaseTerms,
        release: () => slot.release(),
        start: (turn) => {
          slot.start(turn);
          inLine(taskId, again);
        },
      };
    };
  }

  it('waits a little for one when its caller waits for the turn (a blocking SendMessage), and runs here', async () => {
    const { gw, release } = await onePlaceHeld('local-turns-wait', true);
    try {
      const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo waited') });
      const task = (body.result as { task: Task }).task;
      expect(task.status.state).toBe('TASK_STATE_COMPLETED');
      expect(await addedJobs(gw.prefix)).toEqual([]);
    } finally {
      release();
    }
  });

  it('so does a streaming SendStreamingMessage', async () => {
    const { gw, release } = await onePlaceHeld('local-turns-wait-stream', true);
    try {
      const { response, reader } = await openSse(gw.jsonRpcUrl, sendStreamingRequest(textMessage('echo streamed')));
      expect(response.status).toBe(200);
      const events = await reader.waitForEvents(1, 30_000);
      const taskId = (JSON.parse(events[0]?.data as string) as { result: { task: Task } }).result.task.id;
      await waitFor(async () => ((await stateOf(gw.prefix, taskId)) === 'TASK_STATE_COMPLETED' ? true : undefined), 30_000, 'the streamed task to complete');
      reader.abort();
      expect(await addedJobs(gw.prefix)).toEqual([]);
    } finally {
      release();
    }
  });

  // Retried: "short" is judged on the clock (a place given back within two looks, 100 ms), and on
  // a machine shared with other suites a stall of the process or of Redis longer than that makes
  // these 25 ms turns read as long ones, sending the rest of the burst to the queue. Without the
  // line every try fails: twelve turns on two places always queue some.
  it('under a burst of short turns larger than its places, waits its turn in line here rather than in the queue', { retry: 2 }, async () => {
    // Two places, twelve turns of about 25 ms each: the last ones are due well after a first look (50 ms).
    const gw = await startTestGateway({ name: 'local-turns-burst', config: { workerConcurrency: 2 }, adapterOptions: { stepMs: 25 } });
    gateways.push(gw);
    const sends = Array.from({ length: 12 }, () => rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('long 1') }));
    for (const { body } of await Promise.all(sends)) expect((body.result as { task: Task }).task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(await addedJobs(gw.prefix)).toEqual([]);
  });

  // Retried for the reason the burst test above is: its turns are judged short on the clock.
  it('while turns nobody waits for fill the queue, a caller that follows its turn still waits here, behind them', { retry: 2 }, async () => {
    // Four places and short turns (one step of 20 ms): the line moves. The places take the
    // backlog's turns four at a time, so they are given back in bursts a turn's length apart, and
    // a waiter leaves a line that gave nothing back for two looks (100 ms): turns of 80 ms left no
    // margin on a loaded machine (a CI run queued the four callers in all three tries).
    // A hundred and sixty turns sent without waiting: four start here, the rest are queued, a
    // backlog that takes the places about a second to drain.
    const gw = await startTestGateway({ name: 'local-turns-backlog', config: { workerConcurrency: 4, limits: { maxActiveTasks: 1000, burst: 1000 } }, adapterOptions: { stepMs: 20 } });
    gateways.push(gw);
    await Promise.all(Array.from({ length: 160 }, () => send(gw.url, 'long 1')));
    // Past the queue depth's reading interval (200 ms), so the backlog is what a new task reads.
    await new Promise((resolve) => setTimeout(resolve, 250));
    const queued = (await addedJobs(gw.prefix)).length;
    expect(queued).toBeGreaterThan(20);
    const sends = Array.from({ length: 4 }, () => rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo behind the backlog') }));
    const tasks = (await Promise.all(sends)).map(({ body }) => (body.result as { task: Task }).task);
    for (const task of tasks) expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    // Their turns ran here: no job was added for them (queued, each would have joined the backlog).
    const added = await addedJobs(gw.prefix);
    for (const task of tasks) expect(added).not.toContain(turnJobId(task.id, 1));
  });

  it('goes to the queue at once when every place has stayed held a while (long turns): no wait, no lease taken and given back', async () => {
    const { gw, release } = await onePlaceHeld('local-turns-still', false);
    // Held past two looks of a line (100 ms) with nothing given back: the line stands still.
    await new Promise((resolve) => setTimeout(resolve, 150));
    const freeing = setTimeout(release, 300);
    try {
      const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo behind long turns') });
      const task = (body.result as { task: Task }).task;
      expect(task.status.state).toBe('TASK_STATE_COMPLETED');
      expect(await addedJobs(gw.prefix)).toEqual([turnJobId(task.id, 1)]);
      expect(await turnRecord(gw.prefix, task.id)).toMatchObject({ attempts: 1, outcome: 'TASK_STATE_COMPLETED' });
      expect((await turnRecord(gw.prefix, task.id)).handBacks ?? 0).toBe(0);
    } finally {
      clearTimeout(freeing);
      release();
    }
  });

  it('stored and leased, then finding the line standing still, gives its lease back and goes to the queue: one run, one attempt', async () => {
    const { gw, release } = await onePlaceHeld('local-turns-give-back', false);
    // Once the turn is in line, the line stands still for 600 ms.
    let freeing: NodeJS.Timeout | undefined;
    waitInLineNext(gw, release, (_, place) => {
      freeing = setTimeout(() => place.release(), 600);
    });
    try {
      const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo given back') });
      const task = (body.result as { task: Task }).task;
      expect(task.status.state).toBe('TASK_STATE_COMPLETED');
      expect(await addedJobs(gw.prefix)).toEqual([turnJobId(task.id, 1)]);
      // The create's lease was given back as an undone attempt: the job's run is attempt 1, not 2.
      expect(await turnRecord(gw.prefix, task.id)).toMatchObject({ attempts: 1, handBacks: 1, outcome: 'TASK_STATE_COMPLETED' });
      expect((await redis.lrange(`${gw.prefix}:{${task.id}}:history`, 0, -1)).filter((entry) => entry.includes('"ROLE_AGENT"'))).toHaveLength(1);
    } finally {
      clearTimeout(freeing);
    }
  });

  it('sees a cancel that came while it waited for a place after its create: canceled, never run to its end, no job', async () => {
    const { gw, release } = await onePlaceHeld('local-turns-cancel-in-line', false, {}, { stepMs: 30 });
    let canceled: Promise<unknown> | undefined;
    let inLine: number | undefined;
    waitInLineNext(gw, release, (taskId, place) => {
      // Waiting in line is not running: the gauge of running turns does not count it (nor the test's held place, which runs nothing).
      inLine = gw.worker?.runner.runningTurns();
      // The cancel is stored, then the place is freed (before the waiter's second look).
      canceled = rpc(gw.jsonRpcUrl, 'CancelTask', { id: taskId });
      void (async () => {
        while ((await redis.hget(`${gw.prefix}:{${taskId}}:task`, 'cancelRequestedAtMs')) === null) await new Promise((resolve) => setTimeout(resolve, 2));
        place.release();
      })();
    });
    const waitedBefore = await queueWaitSeconds();
    // A blocking send: its caller follows the turn, so it waits in line. 300 steps of 30 ms: run
    // to its end, the turn would complete after about 9 s.
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('long 300') });
    const { id, status } = (body.result as { task: Task }).task;
    await canceled;
    expect(status.state).toBe('TASK_STATE_CANCELED');
    expect(inLine).toBe(0);
    // Its wait in line (until the cancel was stored and the place freed) is its queue wait.
    expect(await queueWaitSeconds()).toBeGreaterThan(waitedBefore);
    expect(await addedJobs(gw.prefix)).toEqual([]);
    expect(await redis.hmget(`${gw.prefix}:{${id}}:task`, 'turnAttempts', 'cancelOutcome')).toEqual(['1', 'TASK_STATE_CANCELED']);
  });

  it('stored and leased, then finding its process stopping once a place frees, gives its lease back and goes to the queue', async () => {
    const { gw, release } = await onePlaceHeld('local-turns-stop-in-line', false);
    let stopping: Promise<void> | undefined;
    waitInLineNext(gw, release, (_, place) => {
      // This process stops taking turns here, then the place frees.
      stopping = gw.worker?.localTurns.stop();
      place.release();
    });
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo while stopping') });
    const task = (body.result as { task: Task }).task;
    await stopping;
    // The queue's worker (still running here) took it over: one run, attempt 1, the create's lease handed back.
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(await addedJobs(gw.prefix)).toEqual([turnJobId(task.id, 1)]);
    expect(await turnRecord(gw.prefix, task.id)).toMatchObject({ attempts: 1, handBacks: 1, outcome: 'TASK_STATE_COMPLETED' });
  });

  it('goes to the queue at once when its caller does not wait (returnImmediately)', async () => {
    const { gw, release } = await onePlaceHeld('local-turns-nowait', false);
    try {
      const id = await send(gw.url, 'echo queued');
      expect(await addedJobs(gw.prefix)).toEqual([turnJobId(id, 1)]);
    } finally {
      release();
    }
  });
});

/** What each turn started on this gateway's places was handed (its lease, as `label` tells it), in order. */
function recordLeasesHanded(gw: TestGateway, label: (turn: LocalTurn) => string | undefined): (string | undefined)[] {
  const local = gw.worker?.localTurns;
  if (local === undefined) throw new Error('the test gateway runs a worker');
  const take = local.take.bind(local);
  const handed: (string | undefined)[] = [];
  local.take = async (ownerKey, taskId, waitMs) => {
    const slot = await take(ownerKey, taskId, waitMs);
    return slot === undefined ? undefined : { ...slot, leaseTerms: slot.leaseTerms, start: (turn) => (handed.push(label(turn)), slot.start(turn)) };
  };
  return handed;
}

describe('a new task\'s first turn whose lease its create took', () => {
  it('is leased by the create: one attempt, this worker, no job; the run takes no lease of its own', async () => {
    const gw = await startTestGateway({ name: 'local-turns-leased' });
    gateways.push(gw);
    const handed = recordLeasesHanded(gw, (turn) => turn.lease?.kind);
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo leased') });
    const task = (body.result as { task: Task }).task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    const fields = await redis.hmget(`${gw.prefix}:{${task.id}}:task`, 'turnAttempts', 'turnWorker', 'turnWithoutJob', 'leaseGeneration');
    // A second take (the run's own acquireLease) would count attempt 2 and bump the generation once more.
    expect(fields).toEqual(['1', gw.worker?.runner.workerId, '1', '2']);
    expect(handed).toEqual(['acquired']);
    expect(await addedJobs(gw.prefix)).toEqual([]);
  });

  it('sees a cancel that came after the create and before its run started: the turn is canceled, not run to its end', async () => {
    const gw = await startTestGateway({ name: 'local-turns-cancel-window', adapterOptions: { stepMs: 30 } });
    gateways.push(gw);
    const local = gw.worker?.localTurns;
    if (local === undefined) throw new Error('the test gateway runs a worker');
    // Between the create (which took the lease) and the start of the run, a CancelTask is answered
    // by Redis: its PUBLISH reaches this process before the run begins.
    const take = local.take.bind(local);
    let canceled: Promise<unknown> | undefined;
    local.take = async (ownerKey, taskId, waitMs) => {
      const slot = await take(ownerKey, taskId, waitMs);
      if (slot === undefined) return undefined;
      let started = false;
      return {
        leaseTerms: slot.leaseTerms,
        release: () => {
          if (!started) slot.release();
        },
        start: (turn) => {
          started = true;
          expect(turn.lease?.kind).toBe('acquired');
          canceled = rpc(gw.jsonRpcUrl, 'CancelTask', { id: taskId });
          void waitFor(async () => ((await redis.hget(`${gw.prefix}:{${taskId}}:task`, 'cancelRequestedAtMs')) === null ? undefined : true), 10_000, 'the cancel to be stored')
            .then(() => new Promise((resolve) => setTimeout(resolve, 100)))
            .then(() => slot.start(turn));
        },
      };
    };
    // 300 steps of 30 ms: run to its end, the turn would complete after about 9 s.
    const id = await send(gw.url, 'long 300');
    const end = await waitFor(async () => {
      const state = await stateOf(gw.prefix, id);
      return state === 'TASK_STATE_CANCELED' || state === 'TASK_STATE_COMPLETED' ? state : undefined;
    }, 30_000, `task ${id} to end`);
    await canceled;
    expect(end).toBe('TASK_STATE_CANCELED');
    // Stopped by this run (attempt 1), not by a later one after the lease lapsed.
    expect(await redis.hmget(`${gw.prefix}:{${id}}:task`, 'turnAttempts', 'cancelOutcome')).toEqual(['1', 'TASK_STATE_CANCELED']);
  });
});

describe('a follow-up\'s turn whose lease its accept took', () => {
  it('is leased by the accept that resumed the task: one attempt, this worker, no job; the run takes no lease of its own', async () => {
    const gw = await startTestGateway({ name: 'local-turns-accept-leased' });
    gateways.push(gw);
    const handed = recordLeasesHanded(gw, (turn) => `${turn.data.turn} ${turn.lease?.kind}`);
    const asked = (await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('dialogue') })).body.result as { task: Task };
    expect(asked.task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const generationAsked = Number(await redis.hget(`${gw.prefix}:{${asked.task.id}}:task`, 'leaseGeneration'));
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: { ...textMessage('Ada'), taskId: asked.task.id } });
    const task = (body.result as { task: Task }).task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(handed).toEqual(['1 acquired', '2 acquired']);
    const fields = await redis.hmget(`${gw.prefix}:{${task.id}}:task`, 'turnAttempts', 'turnWorker', 'turnWithoutJob', 'leaseGeneration');
    // A second take (the run's own acquireLease) would count attempt 2 and move the generation
    // further than the first turn's own take and finish did.
    expect(fields).toEqual(['1', gw.worker?.runner.workerId, '1', String(2 * generationAsked)]);
    expect(await addedJobs(gw.prefix)).toEqual([]);
  });

  it('leaves a turn of the same task running here reachable by cancels when the message only queues behind it', async () => {
    const gw = await startTestGateway({ name: 'local-turns-accept-running', adapterOptions: { stepMs: 30 } });
    gateways.push(gw);
    // 300 steps of 30 ms: run to its end, the turn would complete after about 9 s.
    const id = await send(gw.url, 'long 300');
    await waitFor(async () => ((await stateOf(gw.prefix, id)) === 'TASK_STATE_WORKING' ? true : undefined), 10_000, 'the turn to start');
    // Waits behind the running turn (QUEUED): the place looked for before its accept must not
    // take the running turn's entry among this process's turns, where its cancels are found.
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: { ...textMessage('echo next'), taskId: id }, configuration: { returnImmediately: true } });
    expect(body.error).toBeUndefined();
    const canceled = await rpc(gw.jsonRpcUrl, 'CancelTask', { id });
    expect((canceled.body.result as Task | undefined)?.status.state).toBe('TASK_STATE_CANCELED');
    // Stopped by its own run, told by the cancel's message (attempt 1), not run to its end.
    expect(await redis.hmget(`${gw.prefix}:{${id}}:task`, 'turnAttempts', 'cancelOutcome')).toEqual(['1', 'TASK_STATE_CANCELED']);
    expect(await turnRecord(gw.prefix, id)).toMatchObject({ outcome: 'TASK_STATE_CANCELED' });
    const history = await redis.lrange(`${gw.prefix}:{${id}}:history`, 0, -1);
    expect(history.some((message) => message.includes('long job finished'))).toBe(false);
  });
});

describe('whether a new task\'s turn starts here', () => {
  it('not while turns of the agent wait in the queue, when nobody waits for it: it does not go ahead of them', async () => {
    const prefix = uniquePrefix('local-turns-fair');
    const queues = new TurnQueues(redis, prefix);
    const placeFree: LocalTurnStarter = { hasPlace: () => true, take: () => Promise.resolve({ leaseTerms: undefined, start: () => undefined, release: () => undefined }) };
    const startsHere = async (queue: TurnQueue, waitMs = 0): Promise<boolean> => (await queue.localSlot({ agent: 'default', tenant: '', subject: 'x' }, 'task', waitMs)) !== undefined;
    try {
      expect(await startsHere(new TurnQueue(queues, 10_000, placeFree))).toBe(true);
      // A turn waiting for a worker (no worker runs here), as every turn job is: with a priority.
      await queues.of('default').add('turn', { taskId: 'waiting', turn: 1, ownerKey: 'default//x', contextId: 'c' }, { jobId: turnJobId('waiting', 1), priority: 1 });
      expect(await startsHere(new TurnQueue(queues, 10_000, placeFree))).toBe(false);
      // Without a bound on the queue the reading is taken all the same.
      expect(await startsHere(new TurnQueue(queues, 0, placeFree))).toBe(false);
      expect(await startsHere(new TurnQueue(queues, 10_000, { ...placeFree, hasPlace: () => false }))).toBe(false);
      // A caller that follows its turn waits in this process's line all the same, behind the
      // queued turns its worker took: queued behind the backlog, every new task would join it,
      // and under a load larger than the places the backlog would never drain.
      expect(await startsHere(new TurnQueue(queues, 10_000, placeFree), LOCAL_PLACE_WAIT_MS)).toBe(true);
      expect(await startsHere(new TurnQueue(queues, 10_000, { ...placeFree, hasPlace: () => false }), LOCAL_PLACE_WAIT_MS)).toBe(true);
    } finally {
      await queues.close();
      await deletePrefix(redis, prefix);
    }
  });
});

describe('a turn started where it was accepted, when that process stops', () => {
  // Stall detection would take a minute; only the hand-back or the reconciler can be quicker.
  const slow = { A2A_LOCK_DURATION_MS: '60000', A2A_STALLED_INTERVAL_MS: '30000', A2A_ADAPTER_OPTIONS: '{"stepMs":50}' };
  // A lease that lapses in 2 s and a reconciler that looks every 300 ms: a dead process's turn is found quickly.
  const quick = { ...slow, A2A_LOCK_DURATION_MS: '2000', A2A_RECONCILE_INTERVAL_MS: '300' };

  /**
   * SIGKILLs the process running turn `turn` of the task here, then checks what recovers it: no
   * job ever carried the turn, its lease says so, and a worker started now (its reconciler on
   * `env`'s terms) has its reconciler queue the turn and finishes it as attempt 2.
   */
  async function killedMidTurnThenRecovered(prefix: string, taskId: string, turn: number, started: GatewayProcess, env: Record<string, string>): Promise<void> {
    started.kill('SIGKILL');
    await started.exited;
    expect(await addedJobs(prefix)).toEqual([]);
    // What tells the reconciler that no stall detection will recover this turn.
    expect(await redis.hget(`${prefix}:{${taskId}}:task`, 'turnWithoutJob')).toBe('1');
    const other = await spawnWorkerProcess(prefix, env);
    workers.push(other);
    await waitFor(async () => ((await stateOf(prefix, taskId)) === 'TASK_STATE_COMPLETED' ? true : undefined), 60_000, 'the reconciler to queue the turn and a worker to finish it');
    const record = JSON.parse((await redis.hget(`${prefix}:{${taskId}}:turns`, String(turn))) as string) as TurnRecord;
    expect(record).toMatchObject({ attempts: 2, outcome: 'TASK_STATE_COMPLETED' });
    expect(record.workerId).toContain(`:${other.pid}:`);
    expect(await addedJobs(prefix)).toEqual([turnJobId(taskId, turn)]);
  }

  it('goes to the queue when handed back at shutdown, and another worker finishes it at once', async () => {
    const prefix = uniquePrefix('local-turns-sigterm');
    try {
      const started = await spawnGatewayProcess(prefix, { ...slow, A2A_SHUTDOWN_GRACE_MS: '200', A2A_RECONCILE_INTERVAL_MS: '0' }, 'start');
      processes.push(started);
      const other = await spawnWorkerProcess(prefix, { ...slow, A2A_RECONCILE_INTERVAL_MS: '0' });
      workers.push(other);
      const taskId = await send(started.url, 'long 60');
      const holder = await waitFor(async () => (await redis.get(`${prefix}:{${taskId}}:lease`)) ?? undefined, 20_000, 'the lease');
      expect(holder).toContain(`:${started.child.pid}:`);
      await waitFor(async () => ((await redis.xlen(`${prefix}:{${taskId}}:events`)) >= 5 ? true : undefined), 20_000, 'progress');
      expect(await addedJobs(prefix)).toEqual([]);
      started.kill('SIGTERM');
      expect(await started.exited).toBe('0');
      await waitFor(async () => ((await stateOf(prefix, taskId)) === 'TASK_STATE_COMPLETED' ? true : undefined), 30_000, 'the other worker to finish the turn');
      const record = await turnRecord(prefix, taskId);
      expect(record).toMatchObject({ attempts: 1, handBacks: 1, outcome: 'TASK_STATE_COMPLETED' });
      expect(record.workerId).toContain(`:${other.pid}:`);
      expect(await addedJobs(prefix)).toEqual([turnJobId(taskId, 1)]);
    } finally {
      await deletePrefix(redis, prefix);
    }
  }, 120_000);

  it('is queued again by the reconciler when its process dies mid-turn; attempts are carried', async () => {
    const prefix = uniquePrefix('local-turns-sigkill');
    try {
      // Its own stall detection is off the table: the turn never had a job.
      const started = await spawnGatewayProcess(prefix, { ...quick, A2A_RECONCILE_INTERVAL_MS: '0' }, 'start');
      processes.push(started);
      const taskId = await send(started.url, 'long 60');
      const holder = await waitFor(async () => (await redis.get(`${prefix}:{${taskId}}:lease`)) ?? undefined, 20_000, 'the lease');
      expect(holder).toContain(`:${started.child.pid}:`);
      await waitFor(async () => ((await redis.xlen(`${prefix}:{${taskId}}:events`)) >= 5 ? true : undefined), 20_000, 'progress');
      await killedMidTurnThenRecovered(prefix, taskId, 1, started, quick);
      expect(await redis.hget(`${prefix}:{${taskId}}:task`, 'turnWithoutJob')).toBe('');
    } finally {
      await deletePrefix(redis, prefix);
    }
  }, 120_000);

  it('a follow-up\'s turn too: queued again by the reconciler when its process dies mid-turn; attempts are carried', async () => {
    const prefix = uniquePrefix('local-turns-follow-up-sigkill');
    try {
      const started = await spawnGatewayProcess(prefix, { ...quick, A2A_RECONCILE_INTERVAL_MS: '0' }, 'start');
      processes.push(started);
      const asked = (await rpc(`${started.url}/a2a/jsonrpc`, 'SendMessage', { message: textMessage('dialogue') })).body.result as { task: Task };
      expect(asked.task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
      const taskId = asked.task.id;
      // The answer asks for the long skill by name: a second turn that runs long enough to die in.
      const answer = { ...textMessage('long 60'), taskId, contextId: asked.task.contextId, metadata: { skill: 'long' } };
      const { body } = await rpc(`${started.url}/a2a/jsonrpc`, 'SendMessage', { message: answer, configuration: { returnImmediately: true } });
      expect(body.error).toBeUndefined();
      await waitFor(async () => ((await redis.hget(`${prefix}:{${taskId}}:task`, 'turn')) === '2' && (await redis.get(`${prefix}:{${taskId}}:lease`))?.includes(`:${started.child.pid}:`) ? true : undefined), 20_000, 'the second turn\'s lease');
      const before = await redis.xlen(`${prefix}:{${taskId}}:events`);
      await waitFor(async () => ((await redis.xlen(`${prefix}:{${taskId}}:events`)) >= before + 3 ? true : undefined), 20_000, 'progress');
      await killedMidTurnThenRecovered(prefix, taskId, 2, started, quick);
    } finally {
      await deletePrefix(redis, prefix);
    }
  }, 120_000);
});
