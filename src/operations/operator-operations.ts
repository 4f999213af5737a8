// Operations for the gateway's operators, not for agents' callers: every owner's tasks (listed
// from the recent-tasks index, inspected, watched live, canceled) and the push deliveries that
// were given up on (dead letters), listed and replayed per agent. Looking needs a2a:operator,
// acting (cancel, replay) a2a:admin; both see the caller's own tenant, every tenant with
// a2a:platform besides (src/operator/operator-tasks.ts). They are not
// an extension a client activates, so no card declares them; openapi.yaml and docs/console.md
// document them. The operator console (/console/) is built on these.
import { A2AError } from '../protocol/errors.ts';
import { isTerminal } from '../protocol/types.ts';
import {
  listDeadLettersRequestSchema,
  operatorListTasksRequestSchema,
  operatorTaskRequestSchema,
  operatorWatchRequestSchema,
  replayDeadLetterRequestSchema,
} from '../protocol/schemas.ts';
import type { PushDeadLetters } from '../push/dead-letters.ts';
import { operatorTasksOf, operatorTenants } from '../operator/operator-tasks.ts';
import { spansEveryTenant } from '../auth/scopes.ts';
import type { TaskService } from '../tasks/service.ts';
import { pushNotSupported } from './a2a-operations.ts';
import { defineStream, defineUnary } from './definition.ts';

function deadLetters(service: TaskService): PushDeadLetters {
  if (service.pushDeadLetters === undefined) throw pushNotSupported();
  return service.pushDeadLetters;
}

export const listPushDeadLetters = defineUnary({
  name: 'ListPushDeadLetters',
  scope: 'a2a:operator',
  request: listDeadLettersRequestSchema,
  rest: [{ method: 'GET', path: '/push/deadLetters' }],
  restBody: 'none',
  handle: (request, call) => deadLetters(call.service).list(call.owner.agent, request, operatorTenants(call.principal)),
});

export const replayPushDeadLetter = defineUnary({
  name: 'ReplayPushDeadLetter',
  scope: 'a2a:admin',
  request: replayDeadLetterRequestSchema,
  rest: [{ method: 'POST', path: '/push/deadLetters/{id}:replay' }],
  restBody: 'optional',
  handle: (request, call) => deadLetters(call.service).replay(call.owner.agent, request.id, operatorTenants(call.principal)),
});

/** Every owner's tasks (of every agent), most recently changed first, filtered; bounded work per page. */
export const listOperatorTasks = defineUnary({
  name: 'ListOperatorTasks',
  scope: 'a2a:operator',
  request: operatorListTasksRequestSchema,
  rest: [{ method: 'GET', path: '/operator/tasks' }],
  restBody: 'none',
  handle: (request, call) => operatorTasksOf(call.service).list(call.principal, request),
});

/** One task of any owner: the A2A view, `tasks inspect`'s reading, its timeline, sub-agent tree and dead letters. */
export const inspectOperatorTask = defineUnary({
  name: 'InspectOperatorTask',
  scope: 'a2a:operator',
  request: operatorTaskRequestSchema,
  rest: [{ method: 'GET', path: '/operator/tasks/{id}' }],
  restBody: 'none',
  handle: (request, call) => operatorTasksOf(call.service).inspect(call.principal, request.id),
});

/** Cancels any owner's task, recording the operator on it. */
export const cancelOperatorTask = defineUnary({
  name: 'CancelOperatorTask',
  scope: 'a2a:admin',
  request: operatorTaskRequestSchema,
  rest: [{ method: 'POST', path: '/operator/tasks/{id}:cancel' }],
  restBody: 'optional',
  handle: (request, call) => operatorTasksOf(call.service).cancel(call.principal, request.id),
});

/** SubscribeToTask for any owner's task: the same stream (snapshot, then events, Last-Event-ID resume). */
export const subscribeToOperatorTask = defineStream({
  name: 'SubscribeToOperatorTask',
  scope: 'a2a:operator',
  request: operatorTaskRequestSchema,
  rest: [{ method: 'GET', path: '/operator/tasks/{id}:subscribe' }],
  restBody: 'none',
  async open(request, call) {
    const owner = await operatorTasksOf(call.service).ownerOf(call.principal, request.id);
    const plan = await call.service.subscribe(owner, request, call.lastEventId);
    return { taskId: request.id, snapshot: plan.snapshot, afterId: plan.afterId, closesOn: isTerminal, alreadyEnded: plan.terminal };
  },
});

/**
 * Every task's events as this gateway receives them, live (no replay): what the console's task
 * list updates itself from. Ends after a gap in live delivery; the client re-reads and watches again.
 */
export const watchOperatorTasks = defineStream({
  name: 'WatchOperatorTasks',
  scope: 'a2a:operator',
  request: operatorWatchRequestSchema,
  rest: [{ method: 'GET', path: '/operator/tasks:watch' }],
  restBody: 'none',
  open(_request, call) {
    // Events carry no owner, so a stream of every task is for platform operators only.
    if (!spansEveryTenant(call.principal)) {
      throw new A2AError('PERMISSION_DENIED', 'WatchOperatorTasks streams every tenant\'s events, so it needs the scope "a2a:platform" besides "a2a:operator"; these credentials see their own tenant only. Read ListOperatorTasks again instead.', {
        metadata: { reason: 'TENANT_MISMATCH' },
      });
    }
    if (!call.service.hub.watchesEveryTask) {
      throw new A2AError('UNSUPPORTED_OPERATION', 'WatchOperatorTasks needs one subscription that hears every task, which Redis Cluster (sharded pub/sub) does not offer. Poll ListOperatorTasks instead, or SubscribeToTask for the tasks to follow.', {
        metadata: { reason: 'CLUSTER_MODE' },
      });
    }
    return Promise.resolve({ taskId: '', snapshot: undefined, afterId: '', closesOn: () => false, alreadyEnded: false, everyTask: true });
  },
});

export const OPERATOR_OPERATIONS = [
  listPushDeadLetters,
  replayPushDeadLetter,
  listOperatorTasks,
  inspectOperatorTask,
  cancelOperatorTask,
  subscribeToOperatorTask,
  watchOperatorTasks,
] as const;
