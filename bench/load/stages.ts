// The per-stage latency breakdown of one blocking task (bench section `stages`): a gateway started
// with A2A_STAGE_MARKS_FILE marks each task's moments (src/telemetry/stage-marks.ts); one
// connection sends blocking "echo" messages, so every stage is measured uncontended.
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'undici';
import { STAGES, type StageSummary } from '../../src/telemetry/stage-marks.ts';
import { RPC_HEADERS, createIdSource, rpcBody, sendMessageParams } from './rpc.ts';
import type { SendMessageLoadResult } from './send-message.ts';
import { percentileSorted } from '../stats.ts';

/**
 * Blocking SendMessage "echo hello" back to back over one keep-alive connection, each timed with
 * the high-resolution clock: autocannon reports whole milliseconds, which rounds a sub-millisecond
 * p50 (the SDK's) to 0 and leaves no ratio.
 */
export async function runOneConnection(url: string, seconds: number): Promise<SendMessageLoadResult> {
  const { origin, pathname } = new URL(url);
  const client = new Client(origin, { pipelining: 1 });
  const nextId = createIdSource();
  const latencies: number[] = [];
  let badBodies = 0;
  let non2xx = 0;
  let errors = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  try {
    for (let id = 1; performance.now() < until; id++) {
      const body = rpcBody(id, 'SendMessage', sendMessageParams(nextId(), { text: 'echo hello' }));
      const sent = performance.now();
      try {
        const res = await client.request({ path: pathname, method: 'POST', headers: RPC_HEADERS, body });
        const text = await res.body.text();
        const took = performance.now() - sent;
        if (res.statusCode < 200 || res.statusCode >= 300) non2xx += 1;
        else if (!text.includes('"result"') || !text.includes('TASK_STATE_COMPLETED')) badBodies += 1;
        else latencies.push(took);
      } catch {
        errors += 1;
      }
    }
  } finally {
    await client.close();
  }
  const durationSec = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    requestsPerSec: latencies.length / durationSec,
    p50Ms: percentileSorted(latencies, 50),
    p99Ms: percentileSorted(latencies, 99),
    ok: latencies.length,
    badBodies,
    non2xx,
    errors,
    timeouts: 0,
    durationSec,
  };
}

export interface StageBreakdown {
  load: SendMessageLoadResult;
  summary: StageSummary;
}

/** Warm-up, then SIGUSR2 (the gateway forgets the warm-up's samples), the measured run, and the summary the gateway wrote. */
export async function runStageBreakdown(opts: {
  url: string;
  pid: number;
  file: string;
  seconds: number;
  warmupSeconds: number;
  /** Wraps the measured run (not the warm-up), e.g. to read the gateway's cost around it. */
  around?: (run: () => Promise<SendMessageLoadResult>) => Promise<SendMessageLoadResult>;
}): Promise<StageBreakdown> {
  if (opts.warmupSeconds > 0) await runOneConnection(opts.url, opts.warmupSeconds);
  process.kill(opts.pid, 'SIGUSR2');
  const run = (): Promise<SendMessageLoadResult> => runOneConnection(opts.url, opts.seconds);
  const load = await (opts.around ? opts.around(run) : run());
  // Tasks are summed up a second after their answer, and the file is written once a second.
  await sleep(2500);
  if (!existsSync(opts.file)) throw new Error(`the stages gateway wrote no ${opts.file}: was it started with A2A_STAGE_MARKS_FILE?`);
  return { load, summary: JSON.parse(readFileSync(opts.file, 'utf8')) as StageSummary };
}

export function renderStages({ summary }: StageBreakdown): string {
  const rows = STAGES.map((s) => {
    const { p50, p99, mean } = summary.stages[s];
    return `| ${s.padEnd(9)} | ${fmt(p50)} | ${fmt(p99)} | ${fmt(mean)} |`;
  });
  return [
    `Per-stage latency of one blocking echo task (one connection, ${summary.tasks} tasks; ms; accept includes the job add, sent in the create script's write):`,
    '| stage     |    p50 |    p99 |   mean |',
    '|-----------|--------|--------|--------|',
    ...rows,
  ].join('\n');
}

const fmt = (v: number | null): string => (v === null || !Number.isFinite(v) ? '-' : v.toFixed(2)).padStart(6);
