// Task generations under chaos (the task-generations extension, issue 30). While the load runs
// and the faults land, a sampler reads tasks through random gateways with GetTask (extension
// active), one request per task at a time, so a task's samples are ordered in time. Afterwards
// the judge checks what the extension promises:
// - a task's generation never goes back from one sample to the next;
// - one generation never shows two different tasks (status, artifacts, metadata): a new state
//   always comes with a new generation;
// - at the end, a task's stored generation is at least every sampled one, and for a transfer
//   (one message, never a follow-up) it is exactly the number of events the task announced (the
//   replay buffer's length plus what its bound dropped): each change counted once, none twice,
//   whatever was re-run after a crash.
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RedisClient } from '../src/redis/connection.ts';
import type { RedisKeys } from '../src/store/keys.ts';
import { TASK_GENERATIONS_URI } from '../src/extensions/task-generations.ts';
import type { Random } from './random.ts';

interface Sample {
  generation: number;
  fingerprint: string;
  state: string;
}

export interface GenerationReport {
  tasksSampled: number;
  samples: number;
  /** Reads that failed (a gateway down, Redis restarting): expected under faults, not judged. */
  failedReads: number;
  /** Must be empty: a generation lower than an earlier sample's. */
  wentBack: string[];
  /** Must be empty: one generation showing two different tasks. */
  repeated: string[];
  /** Must be empty: a stored generation below a sample, or (transfers) not the count of announced events. */
  finalMismatches: string[];
  ok: boolean;
}

/** What a task shows besides its generation (its history is not read: the samples ask for none). */
function fingerprintOf(task: { status?: unknown; artifacts?: unknown; metadata?: Record<string, unknown> }): string {
  const metadata = { ...(task.metadata ?? {}) };
  delete metadata[TASK_GENERATIONS_URI];
  return createHash('sha256').update(JSON.stringify({ status: task.status, artifacts: task.artifacts ?? [], metadata })).digest('hex').slice(0, 16);
}

export class GenerationSampler {
  private readonly samples = new Map<string, Sample[]>();
  private failedReads = 0;
  private stopped = false;
  private running: Promise<void> | undefined;

  constructor(
    private readonly options: {
      gateways: () => string[];
      /** The tasks to sample from (grows as the load submits). */
      tasks: () => string[];
      random: Random;
      /** Tasks read per round (each once), and the pause between rounds. */
      perRound: number;
      pauseMs: number;
    },
  ) {}

  start(): void {
    this.running ??= this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  private async loop(): Promise<void> {
    const { random } = this.options;
    while (!this.stopped) {
      const known = this.options.tasks();
      const picked = new Set<string>();
      for (let i = 0; i < Math.min(this.options.perRound, known.length); i++) picked.add(known[random.int(0, known.length - 1)] as string);
      await Promise.all([...picked].map((taskId) => this.sample(taskId)));
      await sleep(this.options.pauseMs);
    }
  }

  private async sample(taskId: string): Promise<void> {
    const gateways = this.options.gateways();
    if (gateways.length === 0) return;
    const gateway = gateways[this.options.random.int(0, gateways.length - 1)] as string;
    try {
      const response = await fetch(`${gateway}/a2a/jsonrpc`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', 'A2A-Extensions': TASK_GENERATIONS_URI },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: taskId, historyLength: 0 } }),
        signal: AbortSignal.timeout(3_000),
      });
      const body = (await response.json()) as { result?: { status?: { state?: string }; artifacts?: unknown; metadata?: Record<string, unknown> } };
      const task = body.result;
      const generation = (task?.metadata?.[TASK_GENERATIONS_URI] as { generation?: unknown } | undefined)?.generation;
      if (task === undefined || typeof generation !== 'number') {
        this.failedReads += 1;
        return;
      }
      const list = this.samples.get(taskId) ?? [];
      list.push({ generation, fingerprint: fingerprintOf(task), state: task.status?.state ?? '?' });
      this.samples.set(taskId, list);
    } catch {
      this.failedReads += 1;
    }
  }

  /** Judges the samples, and each sampled task's stored generation now (after every task settled). */
  async judge(redis: RedisClient, keys: RedisKeys, transfers: ReadonlySet<string>): Promise<GenerationReport> {
    const report: GenerationReport = { tasksSampled: this.samples.size, samples: 0, failedReads: this.failedReads, wentBack: [], repeated: [], finalMismatches: [], ok: false };
    for (const [taskId, samples] of this.samples) {
      report.samples += samples.length;
      const shown = new Map<number, Sample>();
      let highest = 0;
      for (const [i, sample] of samples.entries()) {
        const previous = samples[i - 1];
        if (previous !== undefined && sample.generation < previous.generation) {
          report.wentBack.push(`${taskId}: generation ${previous.generation} (${previous.state}) then ${sample.generation} (${sample.state})`);
        }
        const same = shown.get(sample.generation);
        if (same !== undefined && same.fingerprint !== sample.fingerprint) {
          report.repeated.push(`${taskId}: generation ${sample.generation} showed ${same.state} (${same.fingerprint}) and ${sample.state} (${sample.fingerprint})`);
        }
        shown.set(sample.generation, sample);
        highest = Math.max(highest, sample.generation);
      }
      const k = keys.task(taskId);
      const [stored, trimmed] = await redis.hmget(k.task, 'generation', 'eventsTrimmed');
      if (stored === null) continue; // expired: nothing left to compare
      const generation = Number(stored);
      if (generation < highest) report.finalMismatches.push(`${taskId}: stored generation ${generation} is below the sampled ${highest}`);
      if (transfers.has(taskId)) {
        const announced = (await redis.xlen(k.events)) + Number(trimmed ?? 0);
        if (generation !== announced) report.finalMismatches.push(`${taskId}: generation ${generation}, but ${announced} events announced`);
      }
    }
    report.ok = report.wentBack.length === 0 && report.repeated.length === 0 && report.finalMismatches.length === 0 && report.samples > 0;
    return report;
  }
}
