// The scripts a lease holder calls (turn-operations.ts), described for callScript: keys and
// arguments by name in their Lua's order (src/store/lua/<name>-<keys>.lua), replies decoded.
// Every one but renewLease is fenced by the lease generation and answers STALE to a replaced worker.
import type { JsonObject, JsonValue, Message, StreamResponse, TaskStatus } from '../protocol/types.ts';
import { arg, defineScript, type ArgValue } from './script-call.ts';
import { leaseResultOf } from './lease-reply.ts';
import type { ScriptReply } from './scripts.ts';
import { str } from './script-reply.ts';
import type { StepRecord, TurnRecord } from './task-records.ts';
import type { PendingArtifactChunk } from './stored-artifacts.ts';

type Fenced<R> = { outcome: 'STALE' } | R;

/** The reply's first value, for a script whose other values nobody reads. */
const outcomeOf = <O extends string>(reply: ScriptReply, outcomes: readonly O[]): O | 'STALE' => {
  const first = str(reply[0]);
  return first === 'STALE' ? 'STALE' : ((outcomes as readonly string[]).includes(first) ? first : outcomes[0]) as O;
};

export const acquireLeaseScript = defineScript({
  name: 'acquireLease',
  keys: ['task', 'lease', 'history', 'events', 'turns', 'artifactChunks', 'pushCursors'],
  args: {
    workerId: arg.text,
    leaseTtlMs: arg.int,
    nowMs: arg.int,
    nowIso: arg.text,
    eventChannel: arg.text,
    turnDeadlineMs: arg.intOrZero,
    maxTurnAttempts: arg.intOrZero,
    /** Artifacts weighing more are not in the reply: the caller reads them in slices (artifact-segments.ts). */
    artifactsInlineBytes: arg.intOrZero,
    /** No queue job carries this run (local-turns.ts): should its worker die, the reconciler is the turn's recovery. */
    withoutJob: arg.flag,
  },
  reply: leaseResultOf,
});

export const releaseLeaseScript = defineScript({
  name: 'releaseLease',
  keys: ['task', 'lease'],
  args: { generation: arg.int, workerId: arg.text },
  reply: (reply) => outcomeOf(reply, ['RELEASED']),
});

export const handBackTurnScript = defineScript({
  name: 'handBackTurn',
  keys: ['task', 'lease', 'turns'],
  args: { generation: arg.int, workerId: arg.text, record: arg.json<TurnRecord>() },
  reply: (reply) => outcomeOf(reply, ['HANDED_BACK']),
});

export const chargeBudgetScript = defineScript({
  name: 'chargeBudget',
  keys: ['task'],
  args: { generation: arg.int, units: arg.int },
  reply: (reply): Fenced<{ outcome: 'OK'; total: number }> => (reply[0] === 'STALE' ? { outcome: 'STALE' } : { outcome: 'OK', total: Number(reply[1]) }),
});

export const renewLeaseScript = defineScript({
  name: 'renewLease',
  keys: ['lease'],
  args: { workerId: arg.text, leaseTtlMs: arg.int },
  reply: (): void => undefined,
});

/** The output bounds appendEvents checks (include/outputBound.lua), in its order. */
export type OutputBoundArgs = readonly ArgValue[];

export type AppendReply = Fenced<
  { outcome: 'REPEATED' } | { outcome: 'LIMIT'; limit: string; bound: number; bytes: number } | { outcome: 'OK'; eventId: string }
>;

export const appendEventsScript = defineScript({
  name: 'appendEvents',
  keys: ['task', 'events', 'emitted', 'artifactChunks', 'pushCursors'],
  args: {
    generation: arg.int,
    eventChannel: arg.text,
    nowMs: arg.int,
    taskId: arg.text,
    /** The whole artifacts' JSON, at most SEGMENT_BYTES (artifact-segments.ts). */
    artifacts: arg.optionalText,
    pendingArtifact: arg.optionalJson<PendingArtifactChunk>(),
    status: arg.optionalJson<TaskStatus>(),
    state: arg.optionalText,
    emitScope: arg.optionalText,
    emitSequence: arg.intOrZero,
    emitDigest: arg.optionalText,
    pastPrefix: arg.bit,
    events: arg.eachJson<StreamResponse>(),
    outputBounds: (value: OutputBoundArgs) => value,
  },
  reply: (reply): AppendReply => {
    switch (reply[0]) {
      case 'STALE':
      case 'REPEATED':
        return { outcome: reply[0] };
      case 'LIMIT':
        return { outcome: 'LIMIT', limit: str(reply[1]), bound: Number(reply[2]), bytes: Number(reply[3]) };
      default:
        return { outcome: 'OK', eventId: str(reply[1]) };
    }
  },
});

export type FinishReply = Fenced<
  | { outcome: 'DONE'; eventId: string; directReply: boolean }
  /** The run's last event, which the call said it follows, was not stored: nothing changed. */
  | { outcome: 'UNSTORED' }
  /** The event the call carried would go past an output bound: nothing changed. */
  | { outcome: 'LIMIT'; limit: string; bound: number; bytes: number }
  /** `trace`: '' or JSON; `messages`: the next turn's input, JSON each. */
  | { outcome: 'NEXT'; turn: number; turnInputStart: number; trace: string; messages: string[] }
>;

export const finishTurnScript = defineScript({
  name: 'finishTurn',
  keys: ['task', 'events', 'history', 'inbox', 'lease', 'turns', 'messageIds', 'steps', 'emitted', 'artifactChunks', 'pushCursors'],
  args: {
    generation: arg.int,
    eventChannel: arg.text,
    nowMs: arg.int,
    nowIso: arg.text,
    taskId: arg.text,
    state: arg.text,
    status: arg.json<TaskStatus>(),
    agentMessage: arg.optionalJson<Message>(),
    turnRecord: arg.json<TurnRecord>(),
    /** The whole artifacts' JSON, at most SEGMENT_BYTES (artifact-segments.ts). */
    artifacts: arg.optionalText,
    finalEvent: arg.json<StreamResponse>(),
    retentionSeconds: arg.int,
    outcome: arg.optionalJson<JsonObject>(),
    /** "<input> <output>". */
    tokens: arg.optionalText,
    interrupted: arg.flag,
    directReply: arg.optionalJson<Message>(),
    directEvent: arg.optionalJson<StreamResponse>(),
    /** "<emit scope> <sequence> <digest>" of the run's last event, when the call goes out before its append answered. */
    expectEmitted: arg.optionalText,
    /** The run's last event JSON, carried by this call instead of an append of its own. */
    carriedEvent: arg.optionalText,
    /** The carried event's output bounds (outputBoundArgs), as appendEvents takes them. */
    outputBounds: (value: OutputBoundArgs) => value,
  },
  reply: (reply): FinishReply => {
    if (reply[0] === 'STALE' || reply[0] === 'UNSTORED') return { outcome: reply[0] };
    if (reply[0] === 'LIMIT') return { outcome: 'LIMIT', limit: str(reply[1]), bound: Number(reply[2]), bytes: Number(reply[3]) };
    if (reply[0] === 'DONE') return { outcome: 'DONE', eventId: str(reply[1]), directReply: reply[2] === 'DIRECT' };
    const [, turn, start, trace, ...messages] = reply.map(str);
    return { outcome: 'NEXT', turn: Number(turn), turnInputStart: Number(start), trace: trace ?? '', messages };
  },
});

export const acknowledgeCancelScript = defineScript({
  name: 'acknowledgeCancel',
  keys: ['task', 'events', 'pushCursors'],
  /** field: the task hash field that records it. */
  args: { generation: arg.int, eventChannel: arg.text, nowMs: arg.int, event: arg.json<StreamResponse>(), field: arg.text },
  reply: (reply) => outcomeOf(reply, ['OK']),
});

export const startStepScript = defineScript({
  name: 'startStep',
  keys: ['task', 'steps'],
  /** field: "<turn>:<name>". */
  args: { generation: arg.int, field: arg.text, started: arg.json<StepRecord>() },
  reply: (reply): Fenced<{ outcome: 'STARTED' } | { outcome: 'EXISTS'; record: StepRecord }> =>
    reply[0] === 'STALE' ? { outcome: 'STALE' } : reply[0] === 'EXISTS' ? { outcome: 'EXISTS', record: JSON.parse(str(reply[1])) as StepRecord } : { outcome: 'STARTED' },
});

export const writeStepScript = defineScript({
  name: 'writeStep',
  keys: ['task', 'steps'],
  args: { generation: arg.int, field: arg.text, record: arg.json<StepRecord>() },
  reply: (reply) => outcomeOf(reply, ['OK']),
});

export const writeAdapterStateScript = defineScript({
  name: 'writeAdapterState',
  keys: ['task'],
  args: { generation: arg.int, field: arg.text, value: arg.json<JsonValue>() },
  reply: (reply) => outcomeOf(reply, ['OK']),
});

export const writeTurnRecordScript = defineScript({
  name: 'writeTurnRecord',
  keys: ['task', 'turns'],
  args: { generation: arg.int, turn: arg.int, record: arg.json<TurnRecord>() },
  reply: (reply) => outcomeOf(reply, ['OK']),
});

export const writeArtifactSegmentScript = defineScript({
  name: 'writeArtifactSegment',
  keys: ['task', 'artifactChunks'],
  /** draft: the generation segment 0 answered ('' for segment 0 itself). */
  args: { generation: arg.int, draft: arg.text, index: arg.int, segment: arg.text },
  reply: (reply): Fenced<{ outcome: 'OK'; draft: string } | { outcome: 'GONE' | 'GAP' }> => {
    const outcome = str(reply[0]);
    if (outcome === 'STALE' || outcome === 'GONE' || outcome === 'GAP') return { outcome };
    return { outcome: 'OK', draft: str(reply[1]) };
  },
});

export const switchArtifactSegmentsScript = defineScript({
  name: 'switchArtifactSegments',
  keys: ['task', 'artifactChunks'],
  args: { generation: arg.int, draft: arg.text, segments: arg.int, bytes: arg.int },
  reply: (reply) => outcomeOf(reply, ['OK', 'INCOMPLETE']),
});
