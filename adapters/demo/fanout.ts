// The demo's coordinator skills. `fanout` splits its input among specialist sub-agents (at
// most maxParallel at once), has a reviewer look at their results and combines them; `review`
// is what the demo runs as that reviewer. Both only read their context: the fan-out is
// recorded by the gateway, so a resumed turn gets the same assignments back.
import { DelegationFailedError, type Assignment, type DelegationOptions, type DelegationResult } from '../delegation.ts';
import type { AgentSkill, JsonObject, Message } from '../../src/protocol/types.ts';
import type { AdapterContext, TurnOutcome } from '../types.ts';

const TEXT = 'text/plain';
const JSON_MEDIA = 'application/json';
export const FANOUT_DEFAULT_PARTS = 3;
export const FANOUT_MAX_PARTS = 20;

export const FANOUT_SKILLS: readonly AgentSkill[] = [
  {
    id: 'fanout',
    name: 'Fan-out to sub-agents',
    description:
      `Splits the text into n parts (default ${FANOUT_DEFAULT_PARTS}, at most ${FANOUT_MAX_PARTS}), delegates each to a "specialist" ` +
      'sub-agent (a child task that streams its part back), at most maxParallel at once, has a read-only ' +
      '"reviewer" sub-agent judge the results, and combines them. A JSON data part ' +
      '{"assignments":[{"role","text"}],"maxParallel","onFailure":"continue"|"fail-fast","review":true} ' +
      'spells the assignments out instead.',
    tags: ['demo', 'sub-agents', 'delegation', 'fan-out'],
    examples: ['fanout 4 the quick brown fox jumps over the lazy dog', 'fanout research these three topics'],
    inputModes: [TEXT, JSON_MEDIA],
    outputModes: [TEXT, JSON_MEDIA],
  },
  {
    id: 'review',
    name: 'Review results',
    description:
      'Reads the evidence of a delegation (a JSON data part with the assignments and their states) and gives a ' +
      'verdict: approve when every assignment completed, otherwise reject naming what failed.',
    tags: ['demo', 'sub-agents', 'review'],
    examples: ['review'],
    inputModes: [JSON_MEDIA, TEXT],
    outputModes: [TEXT],
  },
];

interface FanoutPlan {
  assignments: Assignment[];
  options: DelegationOptions;
}

function dataOf(message: Message | undefined): JsonObject | undefined {
  const part = message?.parts.find((p) => p.data !== undefined && p.data !== null && typeof p.data === 'object' && !Array.isArray(p.data));
  return part?.data as JsonObject | undefined;
}

/** "fanout [n] words…" or a data part; n contiguous groups of words, each one assignment. */
export function planFanout(argument: string, message: Message | undefined): FanoutPlan {
  const data = dataOf(message);
  const review = data?.review !== false;
  const options: DelegationOptions = review ? { reviewer: { role: 'reviewer' } } : {};
  if (typeof data?.maxParallel === 'number') options.maxParallel = data.maxParallel;
  if (data?.onFailure === 'fail-fast' || data?.onFailure === 'continue') options.onFailure = data.onFailure;
  if (Array.isArray(data?.assignments)) {
    const assignments = data.assignments.slice(0, FANOUT_MAX_PARTS).map((item): Assignment => {
      const entry = (item ?? {}) as JsonObject;
      return { role: typeof entry.role === 'string' ? entry.role : 'specialist', input: typeof entry.text === 'string' ? entry.text : 'echo' };
    });
    return { assignments, options };
  }
  const match = /^(\d+)\s+([\s\S]*)$/.exec(argument.trim());
  const requested = match === null ? FANOUT_DEFAULT_PARTS : Math.min(FANOUT_MAX_PARTS, Math.max(1, Number(match[1])));
  const words = (match === null ? argument : (match[2] ?? '')).split(/\s+/).filter((w) => w !== '');
  if (words.length === 0) words.push('nothing', 'to', 'split');
  // Exactly n parts (fewer only when there are fewer words), as even as the words allow.
  const parts = Math.min(requested, words.length);
  const assignments: Assignment[] = [];
  for (let i = 0; i < parts; i++) {
    const group = words.slice(Math.floor((i * words.length) / parts), Math.floor(((i + 1) * words.length) / parts));
    assignments.push({ role: 'specialist', input: `stream ${group.join(' ')}` });
  }
  return { assignments, options };
}

const artifactText = (result: DelegationResult['assignments'][number]): string =>
  result.artifacts.flatMap((a) => a.parts.map((p) => p.text ?? '')).join('');

export async function runFanout(ctx: AdapterContext, argument: string): Promise<TurnOutcome> {
  const plan = planFanout(argument, ctx.input[0]);
  // The turn re-runs from the top when its assignments settle: announce the split only once.
  if (!ctx.resumed) await ctx.emitStatus(`Delegating ${plan.assignments.length} assignments`);
  let result: DelegationResult;
  try {
    result = await ctx.delegate('fanout', plan.assignments, plan.options);
  } catch (error) {
    if (error instanceof DelegationFailedError) return { state: 'failed', message: error.message };
    throw error;
  }
  const combined = result.assignments.filter((a) => a.state === 'completed').map(artifactText).join(' ');
  await ctx.emitArtifact({
    artifactId: 'combined',
    name: 'combined',
    parts: [
      { text: combined },
      {
        data: {
          assignments: result.assignments.map((a) => ({ index: a.index, role: a.role, taskId: a.taskId, state: a.state, message: a.message ?? null })),
          completed: result.completed,
          failed: result.failed,
          canceled: result.canceled,
          verdict: result.review?.verdict ?? null,
        },
        mediaType: JSON_MEDIA,
      },
    ],
    lastChunk: true,
  });
  const verdict = result.review === undefined ? '' : ` Reviewer: ${result.review.verdict}`;
  const message = `Combined ${result.completed} of ${result.assignments.length} assignments (${result.failed} failed, ${result.canceled} canceled).${verdict}`;
  if (result.review === undefined) return { state: 'completed', message };
  // The reviewer's judgement is the check of this result; its task is the evidence.
  return {
    state: 'completed',
    message,
    verification: {
      verified: result.review.verdict.startsWith('approve'),
      method: `reviewed by the ${result.review.role} sub-agent`,
      evidence: { reviewerTaskId: result.review.taskId, verdict: result.review.verdict },
    },
  };
}

export async function runReview(ctx: AdapterContext): Promise<TurnOutcome> {
  const evidence = dataOf(ctx.input[0]);
  const assignments = Array.isArray(evidence?.assignments) ? (evidence.assignments as JsonObject[]) : [];
  if (assignments.length === 0) return { state: 'rejected', message: 'review needs a data part with the assignments to judge' };
  const notDone = assignments.filter((a) => a.state !== 'completed');
  const verdict =
    notDone.length === 0
      ? `approve: all ${assignments.length} assignments completed`
      : `reject: ${notDone.map((a) => `assignment ${String(a.index)} ${String(a.state)}`).join(', ')} of ${assignments.length}`;
  await ctx.emitArtifact({ artifactId: 'verdict', name: 'verdict', parts: [{ text: verdict }], lastChunk: true });
  return { state: 'completed', message: verdict };
}
