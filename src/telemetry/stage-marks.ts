// Where one blocking task's time goes, from real timestamps: the gateway and its worker mark the
// moments a task passes (request received, stored, queued, picked up, leased, adapter done,
// finished, turn end seen, answered) and this module turns them into per-stage durations.
// Off by default and then one branch per mark; `npm run bench` turns it on for its `stages`
// section by naming a file (A2A_STAGE_MARKS_FILE), which gets a summary once a second.
import { writeFileSync } from 'node:fs';

/** The moments marked, in the order a blocking task passes them. */
export const STAGE_MARKS = ['received', 'accepted', 'enqueued', 'picked', 'leased', 'adapted', 'finished', 'notified', 'responded'] as const;
export type StageMark = (typeof STAGE_MARKS)[number];

/**
 * The stages reported: each the time between two marks (the adapter's less the event appends it
 * waited for, which are their own stage; an append it did not wait for is part of the finish). Pick-up and notify can be negative: the worker may take
 * the job before the gateway has the reply of the job add, and the gateway may see the terminal
 * event before the worker has the reply of its finish script.
 */
export const STAGES = ['accept', 'enqueue', 'pick-up', 'lease', 'adapter', 'events', 'finish', 'notify', 'response', 'total'] as const;
export type Stage = (typeof STAGES)[number];

export interface StageSummary {
  tasks: number;
  /** Milliseconds, per stage. */
  stages: Record<Stage, { p50: number; p99: number; mean: number }>;
}

interface Marks {
  at: Partial<Record<StageMark, number>>;
  eventsMs: number;
}

/** Samples kept per stage: enough for minutes of load, bounded so a long run cannot grow the heap. */
const MAX_SAMPLES = 200_000;
/** A task is summed up this long after its answer, so a worker's last mark (it may land after) is in. */
const SETTLE_MS = 1000;

const file = process.env.A2A_STAGE_MARKS_FILE;
const open = new Map<string, Marks>();
const samples = new Map<Stage, number[]>(STAGES.map((s) => [s, []]));
let tasks = 0;

/** Milliseconds on a clock that several processes of one machine share (the gateway and a worker may be two). */
const now = (): number => performance.timeOrigin + performance.now();

export const stageMarksOn = (): boolean => file !== undefined;

export function markStage(taskId: string, mark: StageMark): void {
  if (file === undefined) return;
  let marks = open.get(taskId);
  if (marks === undefined) {
    // Only tasks whose request was marked are followed (a follow-up or a child task is not one blocking task).
    if (mark !== 'received') return;
    marks = { at: {}, eventsMs: 0 };
    open.set(taskId, marks);
  }
  marks.at[mark] ??= now();
}

/** Time a turn spent waiting for its event appends (ctx.emit…), summed. */
/**
 * Counts an event append from `startedAt` (timeNow()) to now as time the adapter waited for, up to
 * when the adapter returned: an append still unanswered then (the adapter did not await it) goes
 * on beside the turn's finish, whose stage that part is.
 */
export function addEventsTime(taskId: string, startedAt: number): void {
  const marks = file === undefined ? undefined : open.get(taskId);
  if (marks === undefined) return;
  const end = Math.min(now(), marks.at.adapted ?? Number.POSITIVE_INFINITY);
  if (end > startedAt) marks.eventsMs += end - startedAt;
}

export function timeNow(): number {
  return file === undefined ? 0 : now();
}

function push(stage: Stage, value: number): void {
  const list = samples.get(stage) as number[];
  if (list.length < MAX_SAMPLES) list.push(value);
}

/** Sums up the tasks answered at least SETTLE_MS ago; tasks that never got an answer are dropped after a minute. */
function settle(at: number): void {
  for (const [taskId, { at: m, eventsMs }] of open) {
    const responded = m.responded;
    if (responded === undefined) {
      if (at - (m.received ?? at) > 60_000) open.delete(taskId);
      continue;
    }
    if (at - responded < SETTLE_MS) continue;
    open.delete(taskId);
    const all = STAGE_MARKS.every((k) => m[k] !== undefined);
    if (!all) continue; // a duplicate, a refusal, a task run by another process: not one whole blocking task
    const d = (a: StageMark, b: StageMark): number => (m[b] as number) - (m[a] as number);
    tasks += 1;
    push('accept', d('received', 'accepted'));
    push('enqueue', d('accepted', 'enqueued'));
    push('pick-up', d('enqueued', 'picked'));
    push('lease', d('picked', 'leased'));
    push('adapter', d('leased', 'adapted') - eventsMs);
    push('events', eventsMs);
    push('finish', d('adapted', 'finished'));
    push('notify', d('finished', 'notified'));
    push('response', d('notified', 'responded'));
    push('total', d('received', 'responded'));
  }
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

export function stageSummary(): StageSummary {
  settle(now());
  const stages = {} as StageSummary['stages'];
  for (const stage of STAGES) {
    const list = [...(samples.get(stage) as number[])].sort((a, b) => a - b);
    const mean = list.length === 0 ? Number.NaN : list.reduce((s, v) => s + v, 0) / list.length;
    stages[stage] = { p50: quantile(list, 0.5), p99: quantile(list, 0.99), mean };
  }
  return { tasks, stages };
}

/** Forgets every sample (the bench calls this between its warm-up and the measured run). */
export function resetStageMarks(): void {
  open.clear();
  for (const list of samples.values()) list.length = 0;
  tasks = 0;
}

if (file !== undefined) {
  const path = file;
  // The bench's measured run starts after its warm-up: SIGUSR2 forgets the warm-up's samples.
  process.on('SIGUSR2', resetStageMarks);
  setInterval(() => {
    writeFileSync(path, JSON.stringify(stageSummary()));
  }, 1000).unref();
}
