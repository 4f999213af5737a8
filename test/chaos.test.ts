// A short, seeded run of the chaos suite (chaos/run.ts, `npm run chaos` for the long one):
// real gateway and worker processes on the suite's own redis-server, a load of ledger
// transfers, and at least one SIGKILLed worker, one SIGKILLed gateway and one crashed Redis.
// What the recovery contract promises must hold: no task whose id a client got is lost, no
// charge is made twice, and every SSE stream resumed with Last-Event-ID matches the replay buffer.
import { describe, expect, it } from 'vitest';
import { runChaos } from '../chaos/run.ts';
import { analyzeLedger } from '../chaos/ledger.ts';
import { judgeCoordinator } from '../chaos/coordinators.ts';
import { formatReport } from '../chaos/table.ts';
import { compareWithBuffer, type StreamRecord } from '../chaos/streams.ts';

const record = (snapshotId: string, events: [string, string][]): StreamRecord => ({
  taskId: 't',
  kind: 'transfer',
  snapshotId,
  events: events.map(([id, data]) => ({ id, data })),
  connections: 2,
  resumes: 1,
  resumesElsewhere: 1,
  errorFrames: [],
  outcome: 'terminal',
  note: undefined,
});

// The judges first: a chaos run that cannot fail proves nothing.
describe('the chaos checks', () => {
  const buffer = [
    { id: '1-0', data: 'a' },
    { id: '2-0', data: 'b' },
    { id: '3-0', data: 'c' },
    { id: '4-0', data: 'd' },
  ];
  it('accept a stream that received exactly the buffer after its snapshot', () => {
    expect(compareWithBuffer(record('1-0', [['2-0', 'b'], ['3-0', 'c'], ['4-0', 'd']]), buffer)).toBeUndefined();
  });
  it('name a missing, duplicated, reordered or altered event, and a snapshot not in the buffer', () => {
    expect(compareWithBuffer(record('1-0', [['2-0', 'b'], ['4-0', 'd']]), buffer)).toMatch(/^missing at #2/);
    expect(compareWithBuffer(record('1-0', [['2-0', 'b'], ['3-0', 'c']]), buffer)).toMatch(/^missing 1 event/);
    expect(compareWithBuffer(record('1-0', [['2-0', 'b'], ['2-0', 'b'], ['3-0', 'c'], ['4-0', 'd']]), buffer)).toMatch(/^duplicate at #2/);
    expect(compareWithBuffer(record('1-0', [['3-0', 'c'], ['2-0', 'b'], ['4-0', 'd']]), buffer)).toMatch(/^out of order at #1/);
    expect(compareWithBuffer(record('1-0', [['2-0', 'b'], ['2-5', 'x'], ['3-0', 'c'], ['4-0', 'd']]), buffer)).toMatch(/^unknown event at #2/);
    expect(compareWithBuffer(record('2-0', [['4-0', 'd'], ['3-0', 'c']]), buffer)).toMatch(/^out of order at #1/);
    expect(compareWithBuffer(record('1-0', [['2-0', 'b'], ['3-0', 'X'], ['4-0', 'd']]), buffer)).toMatch(/^different data at #2/);
    expect(compareWithBuffer(record('9-0', []), buffer)).toMatch(/not in the replay buffer/);
  });
  it('check a stream of a trimmed buffer from after the newest dropped event, and still catch a gap there', () => {
    const kept = buffer.slice(2);
    expect(compareWithBuffer(record('1-0', [['2-0', 'b'], ['3-0', 'c'], ['4-0', 'd']]), kept, '2-0')).toBeUndefined();
    expect(compareWithBuffer(record('1-0', [['2-0', 'b'], ['4-0', 'd']]), kept, '2-0')).toMatch(/^missing at #1/);
    expect(compareWithBuffer(record('1-0', [['2-0', 'b'], ['3-0', 'c'], ['4-0', 'd']]), kept)).toMatch(/not in the replay buffer/);
  });
  it('count a key charged twice and a charge made under two step names', () => {
    const clean = analyzeLedger(['t1:1:charge-1', 't1:1:charge-2-again', 't2:1:charge-1']);
    expect([clean.duplicates, clean.doubleCharges]).toEqual([0, 0]);
    const bad = analyzeLedger(['t1:1:charge-1', 't1:1:charge-1', 't1:1:charge-2', 't1:1:charge-2-again']);
    expect(bad.duplicates).toBe(1);
    expect(bad.doubleCharges).toBe(1);
    expect(bad.doubleChargeKeys).toEqual(['t1:1:charge-2: t1:1:charge-2, t1:1:charge-2-again']);
  });
  it('pass a coordinator only when it completed with every assignment, and want a reason otherwise', () => {
    const combined = (states: [string, string | null][]): string =>
      JSON.stringify([
        {
          artifactId: 'combined',
          parts: [
            { text: '' },
            {
              data: {
                assignments: states.map(([state, message], index) => ({ index, role: 'specialist', taskId: `c${index}`, state, message })),
                completed: states.filter(([state]) => state === 'completed').length,
                failed: states.filter(([state]) => state === 'failed').length,
                canceled: 0,
              },
            },
          ],
        },
      ]);
    const done = combined([['completed', 'ok'], ['completed', 'ok'], ['completed', 'ok']]);
    expect(judgeCoordinator({ state: 'TASK_STATE_COMPLETED', reason: '', artifacts: done }, 3).kind).toBe('completed');
    expect(judgeCoordinator({ state: undefined, reason: '', artifacts: '[]' }, 3)).toEqual({ kind: 'lost', why: 'missing from Redis' });
    expect(judgeCoordinator({ state: 'TASK_STATE_WORKING', reason: '', artifacts: '[]' }, 3)).toEqual({ kind: 'lost', why: 'still TASK_STATE_WORKING' });
    const partial = judgeCoordinator({ state: 'TASK_STATE_COMPLETED', reason: '', artifacts: combined([['completed', 'ok'], ['failed', 'worker gave up'], ['completed', 'ok']]) }, 3);
    expect(partial).toMatchObject({ kind: 'failed', reason: 'completed 2 of 3: assignment 1 failed: worker gave up' });
    expect(judgeCoordinator({ state: 'TASK_STATE_COMPLETED', reason: '', artifacts: combined([['completed', 'ok'], ['failed', null], ['completed', 'ok']]) }, 3).kind).toBe('unexplained');
    expect(judgeCoordinator({ state: 'TASK_STATE_COMPLETED', reason: 'done', artifacts: '[]' }, 3).kind).toBe('unexplained');
    expect(judgeCoordinator({ state: 'TASK_STATE_FAILED', reason: 'attempts exhausted', artifacts: '[]' }, 3)).toMatchObject({ kind: 'failed', reason: 'FAILED: attempts exhausted' });
    expect(judgeCoordinator({ state: 'TASK_STATE_FAILED', reason: ' ', artifacts: '[]' }, 3).kind).toBe('unexplained');
  });
});

describe('chaos (short, seeded)', () => {
  it('loses no task, repeats no charge and replays every stream exactly while workers, gateways and Redis die', async () => {
    const log: string[] = [];
    const result = await runChaos({
      tasks: 40,
      // Three fanout coordinators (nine transfer sub-agents) among them, through the same faults.
      coordinators: 3,
      // A few turns of a real downstream A2A agent and of a local model, through the same faults.
      remoteTasks: 4,
      modelTasks: 4,
      seed: 20240,
      // Spread 40 tasks over ~8 s so the first three faults land while work is in flight.
      intervalMs: 200,
      faultPauseMs: [500, 1_500],
      redisDownMs: [300, 1_500],
      settleTimeoutMs: 45_000,
      maxFaultPhaseMs: 45_000,
      log: (line) => log.push(line),
    });
    const table = `${formatReport(result)}\n\n${log.join('\n')}`;
    expect(result.faults.workerKills, table).toBeGreaterThanOrEqual(1);
    expect(result.faults.gatewayKills, table).toBeGreaterThanOrEqual(1);
    expect(result.faults.redisRestarts, table).toBeGreaterThanOrEqual(1);
    expect(result.submitted, table).toBeGreaterThan(0);
    expect(result.completed, table).toBeGreaterThan(0);
    expect(result.lost, table).toBe(0);
    expect(result.duplicates, table).toBe(0);
    expect(result.doubleCharges, table).toBe(0);
    expect(result.mismatched, table).toBe(0);
    expect(result.streamsChecked, table).toBeGreaterThan(0);
    expect(result.coordinatorsSubmitted, table).toBe(3);
    expect(result.lostCoordinators, table).toBe(0);
    expect(result.coordinatorsUnexplained, table).toBe(0);
    expect(result.lostChildren, table).toBe(0);
    expect(result.coordinatorProblems, table).toEqual([]);
    expect(result.strayChildCharges, table).toBe(0);
    expect(result.coordinatorsCompleted + result.coordinatorsFailed, table).toBe(3);
    expect(result.assignmentsListed, table).toBe(9);
    expect(result.backends?.remoteSubmitted, table).toBe(4);
    expect(result.backends?.modelSubmitted, table).toBe(4);
    expect(result.backends?.lost, table).toBe(0);
    expect(result.backends?.wrongResults, table).toEqual([]);
    expect(result.backends?.downstreamDuplicates, table).toEqual([]);
  }, 120_000);
});
