// SubscribeToTask streams kept open while processes die. Each stream reads SSE the way an
// independent client does (eventsource-parser); when its connection drops without a terminal
// event (its gateway was killed, or the gateway ended it) it reconnects to ANOTHER live
// gateway with Last-Event-ID set to the last id it received. At the end, what each stream
// received is compared with the task's replay buffer (XRANGE): any missing, duplicated,
// reordered or altered event is a mismatch (invariant 7, "replay is exact").
import { setTimeout as sleep } from 'node:timers/promises';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { compareEventIds } from '../src/events/hub.ts';
import type { Random } from './random.ts';

const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

export interface StreamRecord {
  taskId: string;
  /** What kind of task it watches ('transfer' load, or a long-lived 'anchor'). */
  kind: string;
  /** SSE id of the Task snapshot the first connection began with; the sequence continues after it. */
  snapshotId: string | undefined;
  /** Every event after the snapshot, across all connections, in arrival order. */
  events: { id: string; data: string }[];
  connections: number;
  /** Connections opened with Last-Event-ID (after a drop). */
  resumes: number;
  /** Resumes answered by a different gateway than the one that dropped the stream. */
  resumesElsewhere: number;
  /** Events without an id (error frames the gateway sent before ending a stream). */
  errorFrames: string[];
  /**
   * Resumes answered from before the replay buffer (docs/replay.md): the Task snapshot and a skip
   * note; the sequence then continues after that snapshot.
   */
  skips?: number;
  outcome: 'open' | 'terminal' | 'skipped' | 'gave-up';
  note: string | undefined;
}

export interface StreamWatcherOptions {
  gateways: () => string[];
  random: Random;
  /**
   * Bound on connections in a row that were refused, or ended without an event within
   * `productiveMs`: a stream in that loop is given up on (and reported). Not a bound on all
   * connections: an anchor stays open for the whole fault phase, and every kill of the gateway
   * serving it drops it once (an hour's run drops each anchor a hundred times or more).
   */
  maxIdleDrops?: number;
  /** A connection that lasted this long, or brought an event, was not an error loop (default 5 s). */
  productiveMs?: number;
  /** Pause before a resume, uniform in [min, max] ms (default 50–250, as an SSE client's retry). */
  resumePauseMs?: [number, number];
}

function terminalIn(data: string): boolean {
  try {
    const parsed = JSON.parse(data) as { statusUpdate?: { status?: { state?: string } }; task?: { status?: { state?: string } } };
    const state = parsed.statusUpdate?.status?.state ?? parsed.task?.status?.state;
    return state !== undefined && TERMINAL.has(state);
  } catch {
    return false;
  }
}

export class StreamWatcher {
  readonly records: StreamRecord[] = [];
  private readonly controller = new AbortController();
  private readonly following: Promise<void>[] = [];

  constructor(private readonly options: StreamWatcherOptions) {}

  /** Starts following a task (its own seeded choices, so streams do not perturb each other). */
  watch(taskId: string, kind: string): StreamRecord {
    const record: StreamRecord = {
      taskId,
      kind,
      snapshotId: undefined,
      events: [],
      connections: 0,
      resumes: 0,
      resumesElsewhere: 0,
      errorFrames: [],
      outcome: 'open',
      note: undefined,
    };
    this.records.push(record);
    this.following.push(this.follow(record, this.options.random.fork(taskId)).catch((error: Error) => {
      record.outcome = 'gave-up';
      record.note = `watcher error: ${error.message}`;
    }));
    return record;
  }

  /** Waits (bounded) for every stream to see its terminal event, then drops the rest. */
  async finish(timeoutMs: number): Promise<void> {
    const all = Promise.all(this.following);
    const timer = new AbortController();
    await Promise.race([all, sleep(timeoutMs, undefined, { signal: timer.signal }).catch(() => undefined)]);
    timer.abort();
    this.controller.abort();
    await all;
  }

  private async follow(record: StreamRecord, random: Random): Promise<void> {
    const maxIdleDrops = this.options.maxIdleDrops ?? 50;
    const productiveMs = this.options.productiveMs ?? 5_000;
    let previousGateway: string | undefined;
    let failures = 0;
    let idleDrops = 0;
    while (!this.controller.signal.aborted) {
      if (idleDrops >= maxIdleDrops) {
        record.outcome = 'gave-up';
        record.note = `${idleDrops} connections in a row were refused or ended within ${productiveMs} ms without an event (${record.connections} in all)`;
        return;
      }
      const live = this.options.gateways();
      if (live.length === 0) {
        await this.pause(200);
        continue;
      }
      // A resumed stream goes to another gateway when there is one: that is the claim under test.
      const others = live.filter((url) => url !== previousGateway);
      const gateway = random.pick(others.length > 0 ? others : live);
      const resumeFrom = record.events.at(-1)?.id ?? record.snapshotId;
      const headers: Record<string, string> = { 'A2A-Version': '1.0' };
      if (resumeFrom !== undefined) headers['Last-Event-ID'] = resumeFrom;
      const elsewhere = previousGateway !== undefined && gateway !== previousGateway;
      record.connections += 1;
      previousGateway = gateway;
      const opened = Date.now();
      let response: Response;
      try {
        response = await fetch(`${gateway}/a2a/rest/tasks/${encodeURIComponent(record.taskId)}:subscribe`, {
          method: 'POST',
          headers,
          signal: this.controller.signal,
        });
      } catch {
        failures += 1;
        idleDrops += 1;
        await this.pause(Math.min(1_000, 100 * failures));
        continue;
      }
      if (!response.ok) {
        const text = await response.text().catch(() => '');
        if (response.status >= 500) {
          failures += 1;
          idleDrops += 1;
          await this.pause(Math.min(1_000, 100 * failures));
          continue;
        }
        if (resumeFrom === undefined && /UNSUPPORTED_OPERATION|already TASK_STATE/.test(text)) {
          // The task ended before we subscribed: nothing to follow, nothing to check.
          record.outcome = 'skipped';
          record.note = 'terminal before the first subscribe';
          return;
        }
        record.outcome = 'gave-up';
        record.note = `HTTP ${response.status} on ${resumeFrom === undefined ? 'subscribe' : `resume after ${resumeFrom}`}: ${text.slice(0, 300)}`;
        return;
      }
      failures = 0;
      if (resumeFrom !== undefined) {
        record.resumes += 1;
        if (elsewhere) record.resumesElsewhere += 1;
      }
      const { terminal, frames } = await this.read(response, record);
      if (terminal) {
        record.outcome = 'terminal';
        return;
      }
      idleDrops = frames > 0 || Date.now() - opened >= productiveMs ? 0 : idleDrops + 1;
      // Dropped without a terminal event: resume (after a short pause, as an SSE client would).
      await this.pause(random.int(...(this.options.resumePauseMs ?? [50, 250])));
    }
  }

  /** Reads one connection to its end: whether the terminal event arrived, and how many events did (error frames aside). */
  private async read(response: Response, record: StreamRecord): Promise<{ terminal: boolean; frames: number }> {
    let sawTerminal = false;
    let frames = 0;
    const parser = createParser({
      onEvent: (message: EventSourceMessage) => {
        if ((message.id === undefined || message.id === '') && message.data.includes('"REPLAY_BUFFER_TRIMMED"')) {
          // The frame before the note was the Task snapshot the stream now continues after.
          const snapshot = record.events.pop();
          if (snapshot !== undefined) record.snapshotId = snapshot.id;
          record.events = [];
          record.skips = (record.skips ?? 0) + 1;
          frames += 1;
          return;
        }
        if (message.id === undefined || message.id === '') {
          record.errorFrames.push(`${message.event ?? 'message'}: ${message.data.slice(0, 300)}`);
          return;
        }
        frames += 1;
        if (record.snapshotId === undefined) record.snapshotId = message.id;
        else record.events.push({ id: message.id, data: message.data });
        if (terminalIn(message.data)) sawTerminal = true;
      },
    });
    if (response.body === null) return { terminal: false, frames };
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
    } catch {
      // The connection died (gateway killed) or we stopped watching: either way, the caller decides.
    }
    return { terminal: sawTerminal, frames };
  }

  private pause(ms: number): Promise<void> {
    return sleep(ms, undefined, { signal: this.controller.signal }).catch(() => undefined);
  }
}

/**
 * What is wrong with a stream's received sequence against the replay buffer, or undefined when
 * it is exact: every buffered event after the snapshot, once, in order, with the same data.
 * Where the replay bound dropped events (through `trimmedThroughId`), what the stream received
 * up to there cannot be checked any more: the rest must be the whole buffer.
 */
export function compareWithBuffer(record: StreamRecord, buffer: readonly { id: string; data: string }[], trimmedThroughId = ''): string | undefined {
  if (record.snapshotId === undefined) return 'no snapshot received';
  let start = buffer.findIndex((e) => e.id === record.snapshotId);
  let got = record.events;
  if (start < 0 && trimmedThroughId !== '' && compareEventIds(record.snapshotId, trimmedThroughId) <= 0) {
    got = got.filter((e) => compareEventIds(e.id, trimmedThroughId) > 0);
    start = -1;
  } else if (start < 0) return `snapshot id ${record.snapshotId} is not in the replay buffer`;
  const expected = buffer.slice(start + 1);
  for (let i = 0; i < Math.max(expected.length, got.length); i++) {
    const want = expected[i];
    const have = got[i];
    if (want === undefined) return `extra event #${i + 1} ${have?.id ?? ''} beyond the buffer's ${expected.length}`;
    if (have === undefined) return `missing ${expected.length - i} event(s) from ${want.id} (received ${got.length} of ${expected.length})`;
    if (have.id !== want.id) {
      const kind = !expected.some((e) => e.id === have.id)
        ? 'unknown event'
        : got.slice(0, i).some((e) => e.id === have.id)
          ? 'duplicate'
          : got.slice(i + 1).some((e) => e.id === want.id)
            ? 'out of order'
            : 'missing';
      return `${kind} at #${i + 1}: received ${have.id}, buffer has ${want.id}`;
    }
    if (have.data !== want.data) return `different data at #${i + 1} (${have.id})`;
  }
  return undefined;
}
