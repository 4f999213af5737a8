// Redis round trips per echo task (blocking, and streamed), on a Redis of this test's own, so the hot path cannot
// creep back up unnoticed. Counted: what any connection of the gateway and its in-process worker
// sends while one task is sent, run and answered; excluded: the timers (queues' stalled checks and
// blocking wait for the next job, the push outbox sweep, the control plane's change poll), which
// run whether or not there is work.
// Two counts: commands, as MONITOR lists them, and round trips, as writes to a socket of this
// Redis: a pipeline (auto-pipelining batches the commands of one tick) is one write, one round
// trip, however many commands it carries. MONITOR cannot tell a pipeline from back-to-back calls.
// Run with ROUND_TRIPS_LIST=1 to print both listings.
import { createHash } from 'node:crypto';
import { Socket } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';
import { startOwnRedis, type OwnRedis } from './support/redis-server.ts';
import { openMonitor } from './support/monitor.ts';
import { openSse, sendStreamingRequest } from './support/sse.ts';
import { scriptSource, type ScriptName } from '../src/store/scripts.ts';

/** What one task may cost, by how its first turn reaches a worker. */
interface Bounds {
  roundTrips: number;
  commands: number;
  scriptCommands: number;
}

/**
 * The default: a new task's first turn starts on the accepting process's own worker
 * (src/runtime/local-turns.ts), so no job is added, fetched or completed, and the task's create
 * takes the turn's lease in its own call (createTask's takeLease), and on a single Redis the
 * owner's claim and the create are one call (createClaimedTask). Round trips today about 2.1:
 * the claim and create with the lease, and the finish carrying the echo's artifact (it returns
 * without awaiting the emit, and the emit was held back for the finish to take:
 * TurnWriteQueue.offerToFinal); the fraction is the queue's admission read (about one per 200 ms)
 * and, on a busy machine, shares of the owner-index and recent-tasks batches: hence one of slack.
 * Commands about 2.1 (3.1 while the append went on its own); commands inside scripts about 58
 * (113 before the scripts gathered their writes and the finish carried the append, 73 before the
 * create wrote its lease from what it had just written instead of reading it back,
 * include/createTask.lua, and the claim read the owner's quota in one HMGET and wrote it in one
 * HSET, include/ownerQuota.lua).
 */
const LOCAL: Bounds = { roundTrips: 3, commands: 3, scriptCommands: 64 };
/**
 * Through the queue (localTurns off, or a gateway without workers of its own; issue 12 asked
 * for 6 round trips): about 8.1 round trips, the path above plus BullMQ's job fetch and its
 * completion and the look for a next job that its wake-up marker causes (the job add rides in the
 * create's write: GatewayOperations.createTask); about 9.2 commands; about 128 commands inside
 * scripts (213, then 173, before the cuts below). Each costs Redis a few thousand instructions
 * (docs/performance.md, "CPU profile"): the replay bound counts what a script appends instead of
 * reading the stream back, acquireLease, finishTurn and the output bound read the task hash's
 * fields in one HMGET each instead of one HGET per field, the scripts gather their writes of the
 * task hash into one HSET and one HDEL (include/fieldWrites.lua), and the finish carries the
 * echo's artifact.
 */
const QUEUED: Bounds = { roundTrips: 9, commands: 10, scriptCommands: 140 };
const TASKS = 10;

/**
 * A streamed echo task whose turn starts where it was accepted: the blocking one's calls, and the
 * stream's place among every gateway's open streams (limits.maxStreams: a script call takes a
 * batch of places, a ZREM gives back what is left when no stream here is open, as happens
 * between these one-at-a-time streams), about 4.1 commands; inside scripts about 76, of which 16
 * are the batch's ZADDs. Its stream watches the task from before its creation
 * (src/events/held-feed.ts), as the blocking wait does, so it reads nothing back from the replay
 * buffer: that read made it 5.1 commands.
 */
const STREAMED: Bounds = { roundTrips: 5, commands: 5, scriptCommands: 82 };

/** Sends one echo task and checks that it completed, blocking or streamed. */
async function sendEcho(gw: TestGateway, send: 'blocking' | 'stream', text: string): Promise<void> {
  if (send === 'blocking') {
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(text) });
    expect((body.result as { task: { status: { state: string } } }).task.status.state).toBe('TASK_STATE_COMPLETED');
    return;
  }
  const { reader } = await openSse(gw.jsonRpcUrl, sendStreamingRequest(textMessage(text)));
  await reader.done;
  const last = JSON.parse(reader.events.at(-1)?.data ?? '{}') as { result?: { statusUpdate?: { status: { state: string } } } };
  expect(last.result?.statusUpdate?.status.state).toBe('TASK_STATE_COMPLETED');
}

/** A traffic count's figures per task, with listings for a failure's message. */
interface TrafficCount {
  perTask: number;
  breakdown: string;
  tripsPerTask: number;
  trips: string;
  inScriptsPerTask: number;
  scriptBreakdown: string;
  /** The EVALSHA calls counted, by SHA1. */
  scriptCalls: Map<string, number>;
}

const isTimer = (args: string[]): boolean => {
  const text = args.join(' ');
  return args[0]?.toLowerCase() === 'bzpopmin' || text.includes('stalled-check') || text.includes('sweeplock') || /\{push(:\d+)?\}:outbox/.test(text) || /\{control\}:seq$/.test(text);
};

/**
 * Counts what this process sends to the Redis at `url` (commands by MONITOR, round trips as
 * socket writes) from now until stop(), leaving out the timers; pause() and resume() leave out
 * what happens between them (a dialogue's question, when its answer is what is counted).
 */
async function countRedisTraffic(url: string): Promise<{ pause(): void; resume(): void; stop(tasks: number): TrafficCount }> {
  let counting = true;
  const monitor = await openMonitor(url);
  const commands: string[][] = [];
  const scriptCommands: string[][] = [];
  const trace: string[] = [];
  monitor.on('monitor', (time: string, args: string[], source: string) => {
    if (!counting) return;
    if (source !== 'lua') commands.push(args);
    else scriptCommands.push(args);
    if (process.env.ROUND_TRIPS_LIST) trace.push(`${time} ${source} ${args.slice(0, 6).map((a) => a.slice(0, 60)).join(' ')}`);
  });
  // Every write to this Redis from this process (the gateway and its worker are in it).
  const writes: string[] = [];
  const port = Number(new URL(url).port);
  const write = Socket.prototype.write;
  Socket.prototype.write = function (this: Socket, chunk: unknown, ...rest: unknown[]): boolean {
    if (counting && this.remotePort === port) writes.push(Buffer.isBuffer(chunk) ? chunk.toString('latin1') : String(chunk));
    return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof Socket.prototype.write;
  // MONITOR replies before it streams; a pause marks where counting starts.
  await new Promise((resolve) => setTimeout(resolve, 200));
  commands.length = 0;
  scriptCommands.length = 0;
  writes.length = 0;
  return {
    pause: () => void (counting = false),
    resume: () => void (counting = true),
    stop(tasks) {
      Socket.prototype.write = write;
      monitor.disconnect();
      // A write's commands, by name: RESP arrays of bulk strings (`*n`, `$len`, name, …).
      const namesIn = (payload: string): string[] => {
        const lines = payload.split('\r\n');
        return lines.flatMap((line, i) => (line.startsWith('*') && lines[i + 1]?.startsWith('$') ? [[lines[i + 2] ?? '', lines[i + 4] ?? ''].join(' ')] : []));
      };
      const roundTrips = writes.map(namesIn).filter((names) => !names.every((name) => isTimer(name.split(' ')) || /stalled-check|sweeplock|outbox|\{control\}:seq/.test(name)));
      const counted = commands.filter((args) => !isTimer(args));
      const byCommand = new Map<string, number>();
      const scriptCalls = new Map<string, number>();
      for (const args of counted) {
        const name = args.slice(0, 2).join(' ');
        byCommand.set(name, (byCommand.get(name) ?? 0) + 1);
        if (args[0]?.toLowerCase() === 'evalsha') scriptCalls.set(args[1] ?? '', (scriptCalls.get(args[1] ?? '') ?? 0) + 1);
      }
      const inScripts = scriptCommands.filter((args) => !isTimer(args));
      const byScriptCommand = new Map<string, number>();
      for (const args of inScripts) byScriptCommand.set(args[0] ?? '', (byScriptCommand.get(args[0] ?? '') ?? 0) + 1);
      const count: TrafficCount = {
        perTask: counted.length / tasks,
        breakdown: [...byCommand].map(([name, n]) => `${n / tasks} × ${name}`).join('\n'),
        tripsPerTask: roundTrips.length / tasks,
        trips: roundTrips.map((names) => names.join(' + ')).join('\n'),
        inScriptsPerTask: inScripts.length / tasks,
        scriptBreakdown: [...byScriptCommand].sort((a, b) => b[1] - a[1]).map(([name, n]) => `${n / tasks} × ${name}`).join('\n'),
        scriptCalls,
      };
      if (process.env.ROUND_TRIPS_LIST) {
        console.log(`commands inside scripts per task ${count.inScriptsPerTask}:\n${count.scriptBreakdown}`);
        console.log(`commands per task ${count.perTask}:\n${count.breakdown}\n${trace.join('\n')}\n\nround trips per task ${count.tripsPerTask}:\n${count.trips}`);
      }
      return count;
    },
  };
}

describe.each([
  { path: 'blocking, its first turn started where it was accepted', send: 'blocking' as const, localTurns: true, bounds: LOCAL },
  { path: 'blocking, its first turn through the queue', send: 'blocking' as const, localTurns: false, bounds: QUEUED },
  { path: 'streamed, its first turn started where it was accepted', send: 'stream' as const, localTurns: true, bounds: STREAMED },
])('an echo task, $path', ({ send, localTurns, bounds }) => {
  let own: OwnRedis;
  let gw: TestGateway;

  beforeAll(async () => {
    own = await startOwnRedis();
    gw = await startTestGateway({ name: 'round-trips', config: { redisUrl: own.url, schedules: { enabled: false }, localTurns } });
    // Scripts loaded, connections open, queues initialised: what is counted is the steady state.
    for (let i = 0; i < 3; i++) await sendEcho(gw, send, 'echo warm-up');
  });

  afterAll(async () => {
    await gw?.close();
    await own?.stop();
  });

  it(`costs at most ${bounds.roundTrips} Redis round trips (${bounds.commands} commands, ${bounds.scriptCommands} inside scripts), gateway and worker together`, async () => {
    const counter = await countRedisTraffic(own.url);
    for (let i = 0; i < TASKS; i++) await sendEcho(gw, send, `echo counted ${i}`);
    // The worker's job completion and look for the next job may land just after the reply.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const { perTask, breakdown, tripsPerTask, trips, inScriptsPerTask, scriptBreakdown } = counter.stop(TASKS);
    expect(perTask, `per task:\n${breakdown}`).toBeLessThanOrEqual(bounds.commands);
    expect(tripsPerTask, `round trips:\n${trips}`).toBeLessThanOrEqual(bounds.roundTrips);
    expect(inScriptsPerTask, `inside scripts, per task:\n${scriptBreakdown}`).toBeLessThanOrEqual(bounds.scriptCommands);
  });
});

/**
 * A dialogue's answer: a blocking SendMessage with the taskId of a task waiting for input, which
 * resumes it. Its call watches the task from before the accept (TaskEvents.watchFollowUpTurnEnd),
 * so it reads neither the task's snapshot nor its replay buffer, and the turn's final event
 * carries the task to it (acceptMessage's answerHistory), so it does not read the task for its
 * answer either; and on a single Redis the owner's claim and the accept are one call that reads
 * the task's state itself (acceptClaimedMessage), and that call takes the turn's lease too, for the
 * turn that starts in this process (acceptMessage's leaseWorkerId); the demo's greeting is not
 * awaited, so the finish carries it. About 2.4 round trips where it took 9.6 (6.3 with the reads
 * cut, 4.5 with the joined accept, 3.3 with the lease in it); inside scripts about 75 (109, 90,
 * 82). What is left: the accept and the finish, the agent's queue depth (read at most every 200
 * ms) and the owner's index batches.
 */
const FOLLOW_UP: Bounds = { roundTrips: 3, commands: 3, scriptCommands: 85 };
const PAIRS = 10;

/** The SHA1 a single Redis runs a store script by (EVALSHA). */
function scriptSha(name: ScriptName): string {
  const plain = new Redis({ lazyConnect: true });
  return createHash('sha1').update(scriptSource(name, plain) as string).digest('hex');
}

describe('a dialogue answered by a blocking follow-up that resumes its task', () => {
  let own: OwnRedis;
  let gw: TestGateway;

  const ask = async (): Promise<string> => {
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('dialogue') });
    const task = (body.result as { task: { id: string; status: { state: string } } }).task;
    expect(task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    return task.id;
  };
  const answer = async (taskId: string): Promise<void> => {
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('Ada', { taskId }) });
    const task = (body.result as { task: { status: { state: string }; history: unknown[] } }).task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.history).toHaveLength(4);
  };

  beforeAll(async () => {
    own = await startOwnRedis();
    gw = await startTestGateway({ name: 'round-trips-follow-up', config: { redisUrl: own.url, schedules: { enabled: false } } });
    for (let i = 0; i < 3; i++) await answer(await ask());
  });

  afterAll(async () => {
    await gw?.close();
    await own?.stop();
  });

  it(`costs at most ${FOLLOW_UP.roundTrips} Redis round trips, and reads neither the task nor its events`, async () => {
    const counter = await countRedisTraffic(own.url);
    for (let i = 0; i < PAIRS; i++) {
      counter.pause();
      const taskId = await ask();
      // The question's owner-index and recent-task batches go out within the second: not the answer's.
      await new Promise((resolve) => setTimeout(resolve, 50));
      counter.resume();
      await answer(taskId);
    }
    // MONITOR may tell of the last finish just after its answer.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const { perTask, breakdown, tripsPerTask, trips, inScriptsPerTask, scriptBreakdown, scriptCalls } = counter.stop(PAIRS);
    const reads = (['readTask', 'readEventsAfter'] as const).filter((name) => scriptCalls.has(scriptSha(name)));
    expect(reads, `round trips:\n${trips}`).toEqual([]);
    expect(perTask, `per task:\n${breakdown}`).toBeLessThanOrEqual(FOLLOW_UP.commands);
    expect(tripsPerTask, `round trips:\n${trips}`).toBeLessThanOrEqual(FOLLOW_UP.roundTrips);
    expect(inScriptsPerTask, `inside scripts, per task:\n${scriptBreakdown}`).toBeLessThanOrEqual(FOLLOW_UP.scriptCommands);
  });
});
