// GetTask that waits for a task generation (the task-generations extension): it answers once the
// task is past the generation the caller names, or when the wait bound is reached, with the task
// as it is then. The wait rides on the task's live events (the gateway's one subscription, as
// streams and blocked SendMessage calls do), never on polling Redis: each event wakes it for one
// cheap read of the generation. A change that announces no event (a message queued for the
// running turn) ends the wait only at the bound; the answer then still carries the new generation.
import { taskNotFound } from '../protocol/errors.ts';
import type { GetTaskRequest, Task } from '../protocol/types.ts';
import type { TaskStore } from '../store/task-store.ts';
import type { Caller } from './a2a-handler.ts';
import type { TaskEvents } from './task-events.ts';

export async function getTaskAfterGeneration(
  deps: { store: TaskStore; events: TaskEvents; read: (caller: Caller, request: GetTaskRequest) => Promise<Task> },
  caller: Caller,
  request: GetTaskRequest,
  after: number,
  waitMs: number,
): Promise<Task> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const mark = await deps.store.gateway.generationMark(request.id, caller.owner);
    if (mark === undefined) throw taskNotFound(request.id);
    const left = deadline - Date.now();
    if (mark.generation > after || left <= 0) break;
    await deps.events.waitForEventAfter(request.id, mark.lastEventId, left);
  }
  return deps.read(caller, request);
}
