import type { HeldTaskFeed } from '../events/held-feed.ts';
import type { Message, StreamResponse, Task, TaskState } from '../protocol/types.ts';

/** Where a stream starts, what ends it, and how its first frames are decided. */
export interface StreamPlan {
  taskId: string;
  /** Sent first when set (a Task snapshot and the event id it stands for). */
  snapshot: { task: Task; eventId: string } | undefined;
  /**
   * Sent right after the snapshot, without an event id (it is not in the buffer): a resume from
   * before the replay buffer says which events it skipped (src/tasks/replay-skip.ts).
   */
  skipNote?: StreamResponse;
  /**
   * The stream's reader fell behind the replay buffer while catching up: the snapshot to go on
   * from and the skip note (TaskService.snapshotAfterSkip). Without it the stream ends with an
   * error naming the Last-Event-ID to resume from.
   */
  snapshotAfterSkip?: (lastEventId: string) => Promise<{ snapshot: { task: Task; eventId: string }; skipNote: StreamResponse }>;
  /** Deliver stored events strictly after this id ('' = from the first). */
  afterId: string;
  /**
   * A task this call created, watched since before its creation: its events are delivered from
   * the watch, with no read of the replay buffer (src/events/held-feed.ts). A consumer that
   * does not follow the plan closes it.
   */
  held?: HeldTaskFeed;
  closesOn: (state: TaskState) => boolean;
  /** Nothing will follow: the client already holds the terminal event. */
  alreadyEnded: boolean;
  /** Called once when the stream ends, however it ends (frees its stream slot). */
  onStreamEnd?: () => void;
  /**
   * An operators' watch stream (WatchTasks): every task's events as they happen, live only (no
   * replay, no snapshot; `taskId` is ignored), never closed by a state. After a gap in live
   * delivery it ends, so the client re-reads what it shows and watches again.
   */
  everyTask?: boolean;
  /**
   * A new task of an agent that may answer with a direct Message (spec 3.1.2, "message-only
   * stream"): the task's lifecycle frames (its creation, the start of its turn) are held back
   * until the turn shows what it is. A direct reply is then the stream's one frame, converted
   * by `directReplyOf`; anything else releases the held frames first.
   */
  holdForDirectReply?: {
    /** The direct Message a final event stands for, or undefined when the event is not one. */
    directReplyOf: (eventJson: string) => Message | undefined;
  };
}
