// A small rolling restart (ops/rolling-restart.ts, `npm run rolling-restart` runs 3 + 3): two
// gateways and two workers on one Redis under steady load, each replaced in turn with SIGTERM.
// No client sees an error (a stream resumed elsewhere with Last-Event-ID is the drain's design),
// no task is lost, no side effect is repeated, and every stopped process exits 0.
import { describe, expect, it } from 'vitest';
import { formatRollingRestart, runRollingRestart } from '../ops/rolling-restart.ts';

describe('a rolling restart under load', () => {
  it('costs no client errors, no lost tasks and no repeated turns', async () => {
    const result = await runRollingRestart({ gateways: 2, workers: 2, clients: 3, settleMs: 2_000, anchorSteps: 150, log: () => undefined });
    const report = formatRollingRestart(result);
    expect(result.restarts, report).toBe(4);
    expect(result.tasks, report).toBeGreaterThan(10);
    expect(result.clientErrors, report).toEqual([]);
    expect(result.lostTasks, report).toEqual([]);
    expect(result.duplicatedTurns, report).toEqual([]);
    expect(result.uncleanExits, report).toEqual([]);
  }, 300_000);
});
