// What happened to a task, in order, for an operator: the newest events of its replay buffer
// (statuses, artifacts, cancel stages, messages) and the tree of sub-agent tasks below it.
// Bounded reads only: a page of events, a fixed depth and number of tree nodes.
import type { RedisClient } from '../redis/connection.ts';
import type { AssignmentRecord } from '../coordination/assignment-records.ts';
import { AssignmentStore } from '../store/assignments/assignment-store.ts';
import type { StreamResponse } from '../protocol/types.ts';
import { countAssignments, readNewestEvents, readTaskStates } from '../store/operator-reads.ts';

/** One event of the replay buffer, with its id (the SSE id) and when it was stored. */
export interface TimelineEntry {
  id: string;
  at: string;
  event: StreamResponse;
}

/** The newest `limit` events, oldest first, and whether older ones exist beyond them. */
export async function readTimeline(redis: RedisClient, prefix: string, taskId: string, limit: number): Promise<{ entries: TimelineEntry[]; truncated: boolean }> {
  const { events, truncated } = await readNewestEvents(redis, prefix, taskId, limit);
  const entries = events.map(({ id, event }) => ({ id, at: new Date(Number(id.split('-')[0])).toISOString(), event }));
  return { entries, truncated };
}

/** A sub-agent task under its coordinator: its role, assignment state, own task state, and its own sub-agents. */
export interface SubAgentNode {
  taskId: string;
  role: string;
  kind: AssignmentRecord['kind'];
  assignmentState: AssignmentRecord['state'];
  /** undefined when the child's task is gone (expired). */
  state: string | undefined;
  children: SubAgentNode[];
}

/**
 * The sub-agent tree below a task, breadth first, at most `maxDepth` levels and `maxNodes`
 * nodes in all (`truncated` says when more exist): every level costs one round of reads.
 */
export async function readSubAgentTree(
  redis: RedisClient,
  prefix: string,
  taskId: string,
  limits: { maxDepth: number; maxNodes: number },
): Promise<{ children: SubAgentNode[]; truncated: boolean }> {
  const assignmentStore = new AssignmentStore(redis, prefix);
  const root: SubAgentNode[] = [];
  let level: { parentId: string; into: SubAgentNode[] }[] = [{ parentId: taskId, into: root }];
  let nodes = 0;
  let truncated = false;
  for (let depth = 0; depth < limits.maxDepth && level.length > 0; depth++) {
    const records = await Promise.all(level.map(({ parentId }) => assignmentStore.readAssignments(parentId)));
    const next: typeof level = [];
    const placed: { node: SubAgentNode; into: SubAgentNode[] }[] = [];
    level.forEach(({ into }, i) => {
      for (const assignment of records[i] ?? []) {
        if (nodes >= limits.maxNodes) {
          truncated = true;
          break;
        }
        nodes += 1;
        const node: SubAgentNode = { taskId: assignment.taskId, role: assignment.role, kind: assignment.kind, assignmentState: assignment.state, state: undefined, children: [] };
        placed.push({ node, into });
        next.push({ parentId: assignment.taskId, into: node.children });
      }
    });
    const states = await readTaskStates(redis, prefix, placed.map(({ node }) => node.taskId));
    placed.forEach(({ node, into }, i) => {
      node.state = states[i];
      into.push(node);
    });
    level = next;
  }
  if (level.length > 0) {
    // Depth exhausted: say whether anything lies below the last level.
    const below = await countAssignments(redis, prefix, level.map(({ parentId }) => parentId));
    if (below.some((count) => count > 0)) truncated = true;
  }
  return { children: root, truncated };
}
