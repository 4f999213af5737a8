// How far back a task's replay buffer reaches (docs/replay.md). The bound itself is applied in
// Redis, by the scripts that append (lua/include/boundReplay.lua); this says what it is and
// what a Last-Event-ID from before it means.
import { compareEventIds } from '../events/hub.ts';

/** The `replay` settings as the scripts take them. */
export interface ReplayBound {
  /** Most events kept (0 = no count bound). */
  maxEvents: number;
  /** Events older than this are dropped from an open task's buffer (0 = no age bound). */
  maxAgeMs: number;
  /** Events a push config has not been sent yet are kept past the bounds, up to this many in all (0 = no cap). */
  pushHoldMaxEvents: number;
  /** Most bytes of events kept (the newest event always stays; 0 = no byte bound). */
  maxBytes: number;
  /** What push configs hold past the bounds, in bytes (0 = no cap). */
  pushHoldMaxBytes: number;
}

const MIB = 1024 * 1024;

export const DEFAULT_REPLAY_BOUND: ReplayBound = { maxEvents: 2_000, maxAgeMs: 86_400_000, pushHoldMaxEvents: 10_000, maxBytes: 16 * MIB, pushHoldMaxBytes: 64 * MIB };

export function replayBoundOf(settings: { maxEvents: number; maxAgeSeconds: number; pushHoldMaxEvents: number; maxBytes: number; pushHoldMaxBytes: number }): ReplayBound {
  return { maxEvents: settings.maxEvents, maxAgeMs: settings.maxAgeSeconds * 1000, pushHoldMaxEvents: settings.pushHoldMaxEvents, maxBytes: settings.maxBytes, pushHoldMaxBytes: settings.pushHoldMaxBytes };
}

/** What the bound dropped from one task's buffer so far (task hash fields eventsTrimmedThrough, eventsTrimmed). */
export interface TrimmedEvents {
  /** Id of the newest event dropped ('' = none ever was). */
  throughId: string;
  /** How many events were dropped in all. */
  count: number;
}

/**
 * True when events after `lastEventId` were dropped, so replaying from it would skip some:
 * exactly when it is older than the newest dropped event. An id from inside the buffer (or the
 * newest dropped one itself) is not: every event after it is still there.
 */
export function isBeforeBuffer(lastEventId: string, trimmed: TrimmedEvents): boolean {
  return trimmed.throughId !== '' && compareEventIds(lastEventId, trimmed.throughId) < 0;
}
