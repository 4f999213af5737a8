// What operators do with every owner's tasks: list them across owners from the recent-tasks
// index, inspect one (the same reading as `tasks inspect`, plus its timeline and sub-agent
// tree), follow it live (a2a:operator), and cancel it (a2a:admin). An operator of tenant T
// sees T's tasks only, exactly as if the others did not exist, whichever tenant T is (the
// default one too); only a2a:platform spans every tenant.
import type { Principal } from '../auth/principal.ts';
import { spansEveryTenant } from '../auth/scopes.ts';
import { A2AError, invalidParams, taskNotFound } from '../protocol/errors.ts';
import type { Task, TaskState } from '../protocol/types.ts';
import type { DeadLetterView, PushDeadLetters } from '../push/dead-letters.ts';
import type { RecentCursor } from '../store/recent-tasks.ts';
import { ownerFromKey, type Owner, type TaskStore } from '../store/task-store.ts';
import { inspectTask, type TaskInspection } from './task-inspection.ts';
import { readSubAgentTree, readTimeline, type SubAgentNode, type TimelineEntry } from './task-timeline.ts';
import { readListedTasks } from '../store/operator-reads.ts';

/** One row of the operators' task list. */
export interface OperatorTaskSummary {
  id: string;
  contextId: string;
  state: TaskState;
  agent: string;
  tenant: string;
  /** The owner's principal (subject). */
  owner: string;
  createdAt: string | undefined;
  /** When the task last changed, as the index has it. */
  changedAt: string;
  /** Set on a sub-agent's task: its coordinator. */
  parentTaskId?: string;
  role?: string;
}

export interface OperatorListRequest {
  agent?: string | undefined;
  ownerTenant?: string | undefined;
  owner?: string | undefined;
  state?: TaskState | undefined;
  contextId?: string | undefined;
  changedAfter?: string | undefined;
  changedBefore?: string | undefined;
  pageSize?: number | undefined;
  pageToken?: string | undefined;
}

export interface OperatorListResponse {
  tasks: OperatorTaskSummary[];
  /** '' when the index has nothing more in the asked range; else pass it as pageToken. */
  nextPageToken: string;
  /** Index entries looked at for this page (at most EXAMINED_PER_PAGE): a page with filters may hold fewer than pageSize and still have a next one. */
  examined: number;
}

/** Everything the console's task page shows. */
export interface OperatorTaskView {
  /** The task as its owner sees it through GetTask (newest HISTORY_SHOWN messages). */
  task: Task;
  inspection: TaskInspection;
  timeline: { entries: TimelineEntry[]; truncated: boolean };
  subAgents: { children: SubAgentNode[]; truncated: boolean };
  /** The task's dead-lettered push deliveries (replayable with ReplayPushDeadLetter). */
  deadLetters: DeadLetterView[];
}

const DEFAULT_PAGE_SIZE = 50;
/** Index entries one page may look at, whatever the filters: the bound on one call's work. */
export const EXAMINED_PER_PAGE = 500;
const TIMELINE_EVENTS = 200;
const HISTORY_SHOWN = 20;
const TREE_LIMITS = { maxDepth: 4, maxNodes: 100 };

/**
 * The tenant an operator's views are confined to: undefined when they span every tenant
 * (a2a:platform, or authentication off), else the operator's own.
 */
export function operatorTenants(operator: Principal | undefined): string | undefined {
  return spansEveryTenant(operator) ? undefined : (operator as Principal).tenant;
}

/** The operator as a task records who canceled it: "operator:<tenant>/<subject>". */
export function operatorIdOf(principal: Principal | undefined): string {
  return principal === undefined ? 'operator:(authentication off)' : `operator:${principal.tenant}/${principal.subject}`;
}

function encodeCursor(cursor: RecentCursor): string {
  return Buffer.from(JSON.stringify([cursor.changedAtMs, cursor.taskId])).toString('base64url');
}

function decodeCursor(token: string): RecentCursor {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(parsed) && parsed.length === 2 && Number.isSafeInteger(parsed[0]) && typeof parsed[1] === 'string') {
      return { changedAtMs: parsed[0] as number, taskId: parsed[1] };
    }
  } catch {
    // answered below
  }
  throw invalidParams([{ field: 'pageToken', description: 'is not a token this gateway issued; use nextPageToken from the previous page' }]);
}

const iso = (ms: string | null | undefined): string | undefined => (ms === null || ms === undefined || ms === '' ? undefined : new Date(Number(ms)).toISOString());

/** What the operators' view reads and does: the store, the dead letters, the owners' cancel. */
export interface OperatorTaskDeps {
  store: TaskStore;
  pushDeadLetters: PushDeadLetters | undefined;
  cancelTask(owner: Owner, request: { id: string }, requestedBy?: string): Promise<Task>;
}

export class OperatorTasks {
  constructor(private readonly service: OperatorTaskDeps) {}

  private get redis() {
    return this.service.store.redis;
  }

  private get prefix(): string {
    return this.service.store.prefix;
  }

  /**
   * The tenant whose tasks this operator may see: undefined for every tenant. A filter naming
   * another tenant than the operator's own is refused.
   */
  private tenantScope(operator: Principal | undefined, requested: string | undefined): string | undefined {
    const own = operatorTenants(operator);
    if (own === undefined) return requested;
    if (requested !== undefined && requested !== own) {
      throw new A2AError('PERMISSION_DENIED', `These operator credentials belong to tenant "${own}" and see only its tasks, not tenant "${requested}"'s.`, {
        metadata: { reason: 'TENANT_MISMATCH' },
      });
    }
    return own;
  }

  /** A page of every owner's tasks, most recently changed first; at most EXAMINED_PER_PAGE index entries are read. */
  async list(operator: Principal | undefined, request: OperatorListRequest): Promise<OperatorListResponse> {
    const tenant = this.tenantScope(operator, request.ownerTenant);
    const pageSize = request.pageSize ?? DEFAULT_PAGE_SIZE;
    const afterMs = request.changedAfter === undefined ? undefined : Date.parse(request.changedAfter);
    const beforeMs = request.changedBefore === undefined ? undefined : Date.parse(request.changedBefore);
    const index = this.service.store.recentTasks;
    const entries = await index.read({
      count: EXAMINED_PER_PAGE,
      cursor: request.pageToken === undefined || request.pageToken === '' ? undefined : decodeCursor(request.pageToken),
      afterMs,
      beforeMs,
    });
    const listed = await readListedTasks(this.redis, this.prefix, entries.map((entry) => entry.taskId));
    const tasks: OperatorTaskSummary[] = [];
    const gone: string[] = [];
    let examined = 0;
    let last: RecentCursor | undefined;
    for (let i = 0; i < entries.length && tasks.length < pageSize; i++) {
      const entry = entries[i] as (typeof entries)[number];
      const row = listed[i];
      examined += 1;
      last = entry;
      if (row === undefined) {
        gone.push(entry.taskId); // expired past its retention: the hint goes
        continue;
      }
      const { ownerKey, state, contextId, createdAtMs, parentTaskId, role } = row;
      const owner = ownerFromKey(ownerKey);
      if (tenant !== undefined && owner.tenant !== tenant) continue;
      if (request.agent !== undefined && owner.agent !== request.agent) continue;
      if (request.ownerTenant !== undefined && owner.tenant !== request.ownerTenant) continue;
      if (request.owner !== undefined && owner.subject !== request.owner) continue;
      if (request.state !== undefined && state !== request.state) continue;
      if (request.contextId !== undefined && contextId !== request.contextId) continue;
      const summary: OperatorTaskSummary = {
        id: entry.taskId,
        contextId: contextId ?? '',
        state: state as TaskState,
        agent: owner.agent,
        tenant: owner.tenant,
        owner: owner.subject,
        createdAt: iso(createdAtMs),
        changedAt: new Date(entry.changedAtMs).toISOString(),
      };
      if (parentTaskId) summary.parentTaskId = parentTaskId;
      if (role) summary.role = role;
      tasks.push(summary);
    }
    await index.drop(gone);
    // More may follow when the page stopped early, or when the read filled its whole budget.
    const more = examined < entries.length || entries.length === EXAMINED_PER_PAGE;
    return { tasks, nextPageToken: more && last !== undefined ? encodeCursor(last) : '', examined };
  }

  /** The task's owner, or TASK_NOT_FOUND when it is gone or outside the operator's tenant. */
  async ownerOf(operator: Principal | undefined, taskId: string): Promise<Owner> {
    const ownerKey = await this.service.store.gateway.taskOwnerKey(taskId);
    if (ownerKey === undefined) throw taskNotFound(taskId);
    const owner = ownerFromKey(ownerKey);
    const tenant = operatorTenants(operator);
    if (tenant !== undefined && owner.tenant !== tenant) throw taskNotFound(taskId);
    return owner;
  }

  async inspect(operator: Principal | undefined, taskId: string): Promise<OperatorTaskView> {
    const owner = await this.ownerOf(operator, taskId);
    const [read, inspection, timeline, subAgents, deadLetters] = await Promise.all([
      this.service.store.gateway.readTask(taskId, owner, HISTORY_SHOWN),
      inspectTask(this.redis, this.prefix, taskId),
      readTimeline(this.redis, this.prefix, taskId, TIMELINE_EVENTS),
      readSubAgentTree(this.redis, this.prefix, taskId, TREE_LIMITS),
      this.service.pushDeadLetters?.list(owner.agent, { taskId }).then((found) => found.deadLetters) ?? Promise.resolve([]),
    ]);
    if (read === undefined || inspection === undefined) throw taskNotFound(taskId);
    return { task: read.task, inspection, timeline, subAgents, deadLetters };
  }

  /**
   * Cancels any owner's task in the operator's reach (CancelOperatorTask needs a2a:admin): the same three
   * stages as the owner's CancelTask, with the operator recorded on the task (cancelRequestedBy)
   * and named in its cancellation events (requestedBy), so the owner sees who did it.
   */
  async cancel(operator: Principal | undefined, taskId: string): Promise<Task> {
    const owner = await this.ownerOf(operator, taskId);
    return this.service.cancelTask(owner, { id: taskId }, operatorIdOf(operator));
  }
}
