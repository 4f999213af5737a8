// The bench's speed-target report: each verdict against its threshold, and a throughput target's
// budget (what the machine's cores leave gateway + Redis per task at the asked rate).
import { describe, expect, it } from 'vitest';
import type { Cost } from '../bench/load/cost.ts';
import type { SendMessageLoadResult } from '../bench/load/send-message.ts';
import type { StreamLoadResult } from '../bench/load/streams.ts';
import { renderSpeedTargets, type AnchorInputs } from '../bench/report-anchors.ts';

const cost = (cpuMsPerTask: number, clientMsPerTask: number, tasks = 1000): Cost => ({
  tasks,
  cpuMs: { server: cpuMsPerTask * tasks, redis: 0, db: Number.NaN },
  cpuMsPerTask,
  clientCpuMs: clientMsPerTask * tasks,
});

const send = (requestsPerSec: number, p50Ms = 10): SendMessageLoadResult => ({
  requestsPerSec,
  p50Ms,
  p99Ms: p50Ms * 2,
  ok: 1000,
  badBodies: 0,
  non2xx: 0,
  errors: 0,
  timeouts: 0,
  durationSec: 4,
});

const streams = (streamsPerSec: number): StreamLoadResult => ({
  completed: 1000,
  streamsPerSec,
  firstEventP50Ms: 1,
  firstEventP99Ms: 2,
  lastEventP50Ms: 3,
  lastEventP99Ms: 4,
  failed: 0,
  incomplete: 0,
  avgEventsPerStream: 4,
  durationSec: 4,
});

function inputs(gateway: { rps: number; sps: number; blockingCost: Cost; streamsCost: Cost; p50: number; idleTop?: [string, number] }): AnchorInputs {
  const blocking = { ...send(gateway.rps), cost: gateway.blockingCost };
  const stream = { ...streams(gateway.sps), cost: gateway.streamsCost };
  return {
    blocking: { gateway: { rounds: [blocking], median: blocking }, sdk: { rounds: [send(2000)], median: send(2000) }, 'sdk-pg': { rounds: [send(250)], median: send(250) } },
    streams: { gateway: { rounds: [stream], median: stream }, sdk: { rounds: [streams(2000)], median: streams(2000) }, 'sdk-pg': { rounds: [streams(200)], median: streams(200) } },
    single: { gateway: send(300, gateway.p50), sdk: send(1500, 0.5) },
    idleRedis:
      gateway.idleTop === undefined
        ? {}
        : { 'idle-redis': { seconds: 10, commandsPerSec: 3.2, scriptsPerSec: 0.3, readsPerSec: 1.4, writesPerSec: 1.4, top: [gateway.idleTop, ['evalsha', 0.3]], cpuMsPerSec: { gateway: 9, redis: 3 } } },
  };
}

const lineOf = (report: string, target: string): string => report.split('\n').find((line) => line.includes(target)) ?? '';

describe('the speed targets the bench prints', () => {
  it('judges each target against its threshold', () => {
    const report = renderSpeedTargets(inputs({ rps: 1250, sps: 1000, blockingCost: cost(0.79, 0.3), streamsCost: cost(1.2, 0.5), p50: 1.6, idleTop: ['get', 1.1] }), 2);
    expect(lineOf(report, 'blocking req/s vs SDK in memory')).toMatch(/^ {2}met +blocking req\/s vs SDK in memory >= 0\.6x: 0\.63x \(1250 \/ 2000\)/);
    expect(lineOf(report, 'streams/s vs SDK in memory')).toMatch(/^ {2}MISSED streams\/s vs SDK in memory >= 1\.0x: 0\.50x/);
    expect(lineOf(report, 'blocking req/s vs SDK on PostgreSQL')).toMatch(/^ {2}met +.*: 5\.00x \(1250 \/ 250\)/);
    expect(lineOf(report, 'CPU per blocking task')).toMatch(/^ {2}met +.*: 0\.79 ms/);
    expect(lineOf(report, 'one connection')).toMatch(/^ {2}MISSED .*: 1\.60 ms/);
    // A once-a-second poll fits 11 times in a window of 10 s; 13 times is more often than that.
    expect(lineOf(report, 'idle gateway')).toMatch(/^ {2}met +.*: most frequent get 1\.10\/s \(11 in 10\.0 s\); all commands 3\.20\/s/);
    const busy = renderSpeedTargets(inputs({ rps: 1250, sps: 1000, blockingCost: cost(0.79, 0.3), streamsCost: cost(1.2, 0.5), p50: 1.6, idleTop: ['get', 1.3] }), 2);
    expect(lineOf(busy, 'idle gateway')).toMatch(/^ {2}MISSED .*: most frequent get 1\.30\/s \(13 in 10\.0 s\)/);
  });

  it("gives a throughput target the CPU per task the cores leave gateway and Redis at the asked rate", () => {
    const report = renderSpeedTargets(inputs({ rps: 1000, sps: 1000, blockingCost: cost(1.1, 0.3), streamsCost: cost(1.2, 0.5), p50: 2 }), 2);
    const lines = report.split('\n');
    // 0.6 × 2,000 req/s = 1,200/s: 2 cores give 2,000 / 1,200 = 1.67 ms a task, the load generator takes 0.30.
    const blocking = lines[lines.findIndex((line) => line.includes('blocking req/s vs SDK in memory')) + 1];
    expect(blocking).toContain('at 1200/s the 2 cores give 1.67 ms a task; load generator 0.30, leaving 1.37 for gateway + Redis, which spend 1.10; one event loop gives 0.83 ms a task, the gateway process spends 1.10');
    // 1.0 × 2,000 streams/s: 1.00 ms a stream, 0.50 of it the load generator's.
    const stream = lines[lines.findIndex((line) => line.includes('streams/s vs SDK in memory')) + 1];
    expect(stream).toContain('at 2000/s the 2 cores give 1.00 ms a task; load generator 0.50, leaving 0.50 for gateway + Redis, which spend 1.20; one event loop gives 0.50 ms a task');
    expect(lineOf(report, 'idle gateway')).toBe('');
  });
});
