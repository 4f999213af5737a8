// The coordinator part of the chaos run: "fanout" tasks whose three assignments are child
// "transfer" tasks. After the faults, each coordinator's assignments are listed through a
// gateway (GET /a2a/rest/tasks/{id}/assignments), so the children's charges are held to the
// same ledger checks as the load's transfers, and each coordinator is judged by its state and
// the `combined` artifact it ended with.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Random } from './random.ts';

/** One row of ListTaskAssignments, as far as the run reads it. */
export interface ListedAssignment {
  taskId: string;
  index: number;
  role: string;
  kind: string;
  state: string;
}

export type AssignmentListing = { assignments: ListedAssignment[] } | { error: string };

/** Lists a coordinator's assignments through any live gateway, retrying (bounded) on transport errors and 5xx. */
export async function fetchAssignments(gateways: () => string[], coordinatorId: string, random: Random, timeoutMs = 20_000): Promise<AssignmentListing> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no attempt';
  for (let attempt = 1; attempt <= 50 && Date.now() < deadline; attempt++) {
    const live = gateways();
    if (live.length === 0) {
      last = 'no gateway up';
      await sleep(200);
      continue;
    }
    const gateway = random.pick(live);
    try {
      const response = await fetch(`${gateway}/a2a/rest/tasks/${encodeURIComponent(coordinatorId)}/assignments`, {
        headers: { 'A2A-Version': '1.0' },
        signal: AbortSignal.timeout(10_000),
      });
      const text = await response.text();
      if (response.status >= 500) {
        last = `HTTP ${response.status} ${text.slice(0, 200)}`;
      } else if (!response.ok) {
        return { error: `HTTP ${response.status} ${text.slice(0, 300)}` };
      } else {
        const body = JSON.parse(text) as { assignments?: ListedAssignment[] };
        if (!Array.isArray(body.assignments)) return { error: `no assignments in ${text.slice(0, 300)}` };
        return { assignments: body.assignments };
      }
    } catch (error) {
      last = `transport ${(error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message}`;
    }
    await sleep(Math.min(1_000, 100 * attempt));
  }
  return { error: `gave up listing: ${last}` };
}

/** The data part of a coordinator's `combined` artifact. */
export interface CombinedData {
  assignments: { index: number; role: string; taskId: string; state: string; message: string | null }[];
  completed: number;
  failed: number;
  canceled: number;
}

/** The `combined` artifact's data part from a task's stored artifacts JSON, if there is one. */
export function readCombined(artifactsJson: string): CombinedData | undefined {
  try {
    const artifacts = JSON.parse(artifactsJson) as { artifactId?: string; parts?: { data?: unknown }[] }[];
    for (const artifact of artifacts) {
      if (artifact.artifactId !== 'combined') continue;
      for (const part of artifact.parts ?? []) {
        const data = part.data as Partial<CombinedData> | undefined;
        if (data !== undefined && data !== null && typeof data === 'object' && Array.isArray(data.assignments) && typeof data.completed === 'number') {
          return { assignments: data.assignments, completed: data.completed, failed: data.failed ?? 0, canceled: data.canceled ?? 0 };
        }
      }
    }
  } catch {
    // unreadable: no combined artifact
  }
  return undefined;
}

export type CoordinatorVerdict =
  | { kind: 'lost'; why: string }
  | { kind: 'completed'; combined: CombinedData }
  /** Ended otherwise, and says why (its own status message, or its assignments' messages). */
  | { kind: 'failed'; reason: string; combined: CombinedData | undefined }
  /** Ended otherwise without any reason, or completed without the artifact that says how. */
  | { kind: 'unexplained'; why: string; combined: CombinedData | undefined };

const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

/**
 * A coordinator passes when it is COMPLETED with every one of its `expected` assignments
 * completed in its combined artifact. Reasons have task ids elided (so they group).
 */
export function judgeCoordinator(fact: { state: string | undefined; reason: string; artifacts: string }, expected: number): CoordinatorVerdict {
  if (fact.state === undefined) return { kind: 'lost', why: 'missing from Redis' };
  if (!TERMINAL.has(fact.state)) return { kind: 'lost', why: `still ${fact.state}` };
  const combined = readCombined(fact.artifacts);
  if (fact.state === 'TASK_STATE_COMPLETED') {
    if (combined === undefined) return { kind: 'unexplained', why: 'COMPLETED without a combined artifact', combined };
    if (combined.completed === expected && combined.assignments.length === expected) return { kind: 'completed', combined };
    const notDone = combined.assignments.filter((a) => a.state !== 'completed');
    const said = notDone.filter((a) => (a.message ?? '').trim() !== '');
    const summary = `completed ${combined.completed} of ${expected}`;
    if (notDone.length > 0 && said.length === 0) return { kind: 'unexplained', why: `${summary}; ${notDone.map((a) => `assignment ${a.index} ${a.state}`).join(', ')} without a message`, combined };
    if (notDone.length === 0) return { kind: 'unexplained', why: `${summary} but lists ${combined.assignments.length} assignments, none unfinished`, combined };
    return { kind: 'failed', reason: `${summary}: ${said.map((a) => `assignment ${a.index} ${a.state}: ${(a.message ?? '').slice(0, 120)}`).join(' | ')}`, combined };
  }
  const label = fact.state.replace('TASK_STATE_', '');
  if (fact.reason.trim() === '') return { kind: 'unexplained', why: `${label} without a status message`, combined };
  return { kind: 'failed', reason: `${label}: ${fact.reason}`, combined };
}
