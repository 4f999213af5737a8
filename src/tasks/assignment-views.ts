// ListTaskAssignments (assignments extension): a coordinator's assignments, in the order they
// were made, with each child's current state.
import type { AssignmentRecord } from '../coordination/assignment-records.ts';
import type { AssignmentStore } from '../store/assignments/assignment-store.ts';
import { taskNotFound } from '../protocol/errors.ts';
import type { TaskState } from '../protocol/types.ts';
import type { Owner, TaskStore } from '../store/task-store.ts';

/** One assignment as ListTaskAssignments reports it. */
export interface AssignmentView {
  taskId: string;
  delegation: string;
  index: number;
  role: string;
  kind: 'work' | 'review';
  state: AssignmentRecord['state'];
  /** The child task's own state right now. */
  taskState: TaskState | undefined;
  queuedAt: string;
  startedAt?: string;
  /** 1 for the first assignment that got a slot, 2 for the next, … (FIFO made visible). */
  startOrder?: number;
  settledAt?: string;
  question?: string;
}

const iso = (ms: number | undefined): string | undefined => (ms === undefined ? undefined : new Date(ms).toISOString());

export async function listAssignments(store: TaskStore, assignments: AssignmentStore, owner: Owner, taskId: string): Promise<{ taskId: string; assignments: AssignmentView[] }> {
  if ((await store.gateway.readTask(taskId, owner, 0)) === undefined) throw taskNotFound(taskId);
  const records = await assignments.readAssignments(taskId);
  const children = await Promise.all(records.map((r) => store.gateway.readTask(r.taskId, owner, 0)));
  const views = records.map((record, i): AssignmentView => {
    const view: AssignmentView = {
      taskId: record.taskId,
      delegation: record.delegation,
      index: record.index,
      role: record.role,
      kind: record.kind,
      state: record.state,
      taskState: children[i]?.task.status.state,
      queuedAt: iso(record.queuedAtMs) as string,
    };
    const started = iso(record.grantedAtMs);
    if (started !== undefined) view.startedAt = started;
    if (record.grantSeq !== undefined) view.startOrder = record.grantSeq;
    const settled = iso(record.settledAtMs);
    if (settled !== undefined) view.settledAt = settled;
    if (record.question !== undefined) view.question = record.question;
    return view;
  });
  return { taskId, assignments: views };
}
