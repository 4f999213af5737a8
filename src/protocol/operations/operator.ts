// The operators' operations, not for agents' callers: every owner's tasks (listed, inspected,
// watched live, canceled) and the push deliveries that were given up on (dead letters). Looking
// needs a2a:operator, acting (cancel, replay) a2a:admin. No card declares them; openapi.yaml and
// docs/console.md document them. Their handlers are in src/operations/operator-operations.ts.
import {
  listDeadLettersRequestSchema,
  operatorListTasksRequestSchema,
  operatorTaskRequestSchema,
  operatorWatchRequestSchema,
  replayDeadLetterRequestSchema,
} from '../schemas.ts';
import { streamSpec, unarySpec, type OperationSpec } from './spec.ts';

export const listPushDeadLetters = unarySpec({
  name: 'ListPushDeadLetters',
  scope: 'a2a:operator',
  request: listDeadLettersRequestSchema,
  rest: [{ method: 'GET', path: '/push/deadLetters' }],
  restBody: 'none',
});

export const replayPushDeadLetter = unarySpec({
  name: 'ReplayPushDeadLetter',
  scope: 'a2a:admin',
  request: replayDeadLetterRequestSchema,
  rest: [{ method: 'POST', path: '/push/deadLetters/{id}:replay' }],
  restBody: 'optional',
});

/** Every owner's tasks (of every agent), most recently changed first, filtered; bounded work per page. */
export const listOperatorTasks = unarySpec({
  name: 'ListOperatorTasks',
  scope: 'a2a:operator',
  request: operatorListTasksRequestSchema,
  rest: [{ method: 'GET', path: '/operator/tasks' }],
  restBody: 'none',
});

/** One task of any owner: the A2A view, `tasks inspect`'s reading, its timeline, sub-agent tree and dead letters. */
export const inspectOperatorTask = unarySpec({
  name: 'InspectOperatorTask',
  scope: 'a2a:operator',
  request: operatorTaskRequestSchema,
  rest: [{ method: 'GET', path: '/operator/tasks/{id}' }],
  restBody: 'none',
});

/** Cancels any owner's task, recording the operator on it. */
export const cancelOperatorTask = unarySpec({
  name: 'CancelOperatorTask',
  scope: 'a2a:admin',
  request: operatorTaskRequestSchema,
  rest: [{ method: 'POST', path: '/operator/tasks/{id}:cancel' }],
  restBody: 'optional',
});

/** SubscribeToTask for any owner's task: the same stream (snapshot, then events, Last-Event-ID resume). */
export const subscribeToOperatorTask = streamSpec({
  name: 'SubscribeToOperatorTask',
  scope: 'a2a:operator',
  request: operatorTaskRequestSchema,
  rest: [{ method: 'GET', path: '/operator/tasks/{id}:subscribe' }],
  restBody: 'none',
});

/** Every task's events as this gateway receives them, live (no replay): what the console's task list updates itself from. */
export const watchOperatorTasks = streamSpec({
  name: 'WatchOperatorTasks',
  scope: 'a2a:operator',
  request: operatorWatchRequestSchema,
  rest: [{ method: 'GET', path: '/operator/tasks:watch' }],
  restBody: 'none',
});

export const OPERATOR_SPECS: readonly OperationSpec[] = [
  listPushDeadLetters,
  replayPushDeadLetter,
  listOperatorTasks,
  inspectOperatorTask,
  cancelOperatorTask,
  subscribeToOperatorTask,
  watchOperatorTasks,
];
