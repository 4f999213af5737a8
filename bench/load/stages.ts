// The per-stage latency breakdown of one blocking task (bench section `stages`): a gateway started
// with A2A_STAGE_MARKS_FILE marks each task's moments (src/telemetry/stage-marks.ts); one
// connection sends blocking "echo" messages, so every stage is measured uncontended.
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { STAGES, type StageSummary } from '../../src/telemetry/stage-marks.ts';
import { runSendMessageLoad, type SendMessageLoadResult } from './send-message.ts';

export interface StageBreakdown {
  load: SendMessageLoadResult;
  summary: StageSummary;
}

/** Warm-up, then SIGUSR2 (the gateway forgets the warm-up's samples), the measured run, and the summary the gateway wrote. */
export async function runStageBreakdown(opts: { url: string; pid: number; file: string; seconds: number; warmupSeconds: number }): Promise<StageBreakdown> {
  if (opts.warmupSeconds > 0) await runSendMessageLoad({ url: opts.url, connections: 1, seconds: opts.warmupSeconds, returnImmediately: false });
  process.kill(opts.pid, 'SIGUSR2');
  const load = await runSendMessageLoad({ url: opts.url, connections: 1, seconds: opts.seconds, returnImmediately: false });
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
    `Per-stage latency of one blocking echo task (one connection, ${summary.tasks} tasks; ms):`,
    '| stage     |    p50 |    p99 |   mean |',
    '|-----------|--------|--------|--------|',
    ...rows,
  ].join('\n');
}

const fmt = (v: number | null): string => (v === null || !Number.isFinite(v) ? '-' : v.toFixed(2)).padStart(6);
