// What a turn may store: bytes of events per artifact, per turn and per task. Counted in the
// script that stores the events (appendEvents, its outputBound fragment), so every worker of a
// task and every attempt of a turn share one count; an event past a bound is not stored and the
// turn fails with an OutputLimitError naming the setting.
import { noteLimitRefusal } from './limit-refusal.ts';

/** The settings that bound what a turn stores (limits.* and agents.<name>.limits.*). */
export type OutputLimitName = 'limits.maxArtifactBytes' | 'limits.maxTurnOutputBytes' | 'limits.maxTaskOutputBytes';

export interface OutputLimits {
  maxArtifactBytes: number;
  maxTurnOutputBytes: number;
  maxTaskOutputBytes: number;
}

export const DEFAULT_OUTPUT_LIMITS: OutputLimits = {
  maxArtifactBytes: 16 * 1024 * 1024,
  maxTurnOutputBytes: 32 * 1024 * 1024,
  maxTaskOutputBytes: 64 * 1024 * 1024,
};

const ENV_NAMES: Record<OutputLimitName, string> = {
  'limits.maxArtifactBytes': 'A2A_MAX_ARTIFACT_BYTES',
  'limits.maxTurnOutputBytes': 'A2A_MAX_TURN_OUTPUT_BYTES',
  'limits.maxTaskOutputBytes': 'A2A_MAX_TASK_OUTPUT_BYTES',
};

const WHAT: Record<OutputLimitName, string> = {
  'limits.maxArtifactBytes': 'one artifact',
  'limits.maxTurnOutputBytes': 'one turn',
  'limits.maxTaskOutputBytes': 'one task (all its turns)',
};

export const isOutputLimitName = (name: string): name is OutputLimitName => name in ENV_NAMES;

/**
 * A turn's event was refused because it would take what the turn stores past a bound. Nothing
 * of that event was stored; the turn fails with this message (it names the setting, its value,
 * and how to raise it). Later writes of the same turn are refused with it too.
 */
export class OutputLimitError extends Error {
  override readonly name = 'OutputLimitError';

  constructor(
    readonly limit: OutputLimitName,
    readonly maxBytes: number,
    /** What the count would have been with the refused event. */
    readonly wouldBeBytes: number,
    readonly taskId: string,
  ) {
    const setting = limit.slice('limits.'.length);
    super(
      `The agent's output went past ${limit} (${maxBytes} bytes for ${WHAT[limit]}; the refused event would have made it ${wouldBeBytes}) ` +
        `on task ${taskId}: the event was not stored and the turn fails. Raise ${limit} (${ENV_NAMES[limit]}, or agents.<name>.limits.${setting}) if replies this large are expected.`,
    );
    noteLimitRefusal(limit);
  }
}

export const isOutputLimitError = (error: unknown): error is OutputLimitError => error instanceof OutputLimitError;

/** Arguments the appendEvents script takes last (popped before anything else reads ARGV). */
export function outputBoundArgs(limits: OutputLimits, artifact: { artifactId: string; append: boolean } | undefined): (string | number)[] {
  return [artifact?.artifactId ?? '', artifact?.append === true ? '1' : '0', limits.maxArtifactBytes, limits.maxTurnOutputBytes, limits.maxTaskOutputBytes];
}
