// What a client resuming from before the replay buffer is told (docs/replay.md): after the Task
// snapshot, one status update carrying the snapshot's state and, in the gateway's metadata, which
// events it did not get. Sent on that stream only (no SSE id, never stored): a reconnect after
// it resumes from the snapshot's event id.
import { GATEWAY_METADATA_KEY } from '../store/task-store.ts';
import type { TrimmedEvents } from '../store/replay-bound.ts';
import type { StreamResponse, Task } from '../protocol/types.ts';

/** metadata.a2aGateway.replay of the note. */
export interface ReplaySkip {
  reason: 'REPLAY_BUFFER_TRIMMED';
  /** The Last-Event-ID the client sent. */
  lastEventId: string;
  /** Id of the newest event the buffer dropped: events after lastEventId up to it are gone. */
  trimmedThroughEventId: string;
  /** The event the snapshot stands for: what follows are the events after it. */
  snapshotEventId: string;
  /** How many events the task's buffer has dropped in all (those the client missed are among them). */
  eventsTrimmed: number;
  message: string;
}

export function replaySkipNote(task: Task, snapshotEventId: string, lastEventId: string, trimmed: TrimmedEvents): StreamResponse {
  const skip: ReplaySkip = {
    reason: 'REPLAY_BUFFER_TRIMMED',
    lastEventId,
    trimmedThroughEventId: trimmed.throughId,
    snapshotEventId,
    eventsTrimmed: trimmed.count,
    message:
      `Events after ${lastEventId} were dropped from task ${task.id}'s replay buffer (it keeps the newest events only, see replay.maxEvents and replay.maxAgeSeconds), ` +
      `so they were skipped: the Task snapshot before this update is the task as of event ${snapshotEventId}, and the events after it follow.`,
  };
  const status = { state: task.status.state, ...(task.status.timestamp === undefined ? {} : { timestamp: task.status.timestamp }) };
  return {
    statusUpdate: {
      taskId: task.id,
      contextId: task.contextId,
      status,
      metadata: { [GATEWAY_METADATA_KEY]: { replay: { ...skip } } },
    },
  };
}
