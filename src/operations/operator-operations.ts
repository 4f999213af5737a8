// Operations for the gateway's operators, not for agents' callers: every owner's tasks (listed
// from the recent-tasks index, inspected, watched live, canceled) and the push deliveries that
// were given up on (dead letters), listed and replayed per agent. Looking needs a2a:operator,
// acting (cancel, replay) a2a:admin; both see the caller's own tenant, every tenant with
// a2a:platform besides (src/operator/operator-tasks.ts). They are not
// an extension a client activates, so no card declares them; openapi.yaml and docs/console.md
// document them. The operator console (/console/) is built on these.
import {
  listDeadLettersRequestSchema,
  operatorListTasksRequestSchema,
  operatorTaskRequestSchema,
  operatorWatchRequestSchema,
  replayDeadLetterRequestSchema,
} from '../protocol/schemas.ts';
import { defineStream, defineUnary } from './definition.ts';

export const listPushDeadLetters = defineUnary({
  name: 'ListPushDeadLetters',
  scope: 'a2a:operator',
  request: listDeadLettersRequestSchema,
  rest: [{ method: 'GET', path: '/push/deadLetters' }],
  restBody: 'none',
  handle: (request, call) => call.service.operator.listDeadLetters(call, request),
});

export const replayPushDeadLetter = defineUnary({
  name: 'ReplayPushDeadLetter',
  scope: 'a2a:admin',
  request: replayDeadLetterRequestSchema,
  rest: [{ method: 'POST', path: '/push/deadLetters/{id}:replay' }],
  restBody: 'optional',
  handle: (request, call) => call.service.operator.replayDeadLetter(call, request),
});

/** Every owner's tasks (of every agent), most recently changed first, filtered; bounded work per page. */
export const listOperatorTasks = defineUnary({
  name: 'ListOperatorTasks',
  scope: 'a2a:operator',
  request: operatorListTasksRequestSchema,
  rest: [{ method: 'GET', path: '/operator/tasks' }],
  restBody: 'none',
  handle: (request, call) => call.service.operator.listTasks(call, request),
});

/** One task of any owner: the A2A view, `tasks inspect`'s reading, its timeline, sub-agent tree and dead letters. */
export const inspectOperatorTask = defineUnary({
  name: 'InspectOperatorTask',
  scope: 'a2a:operator',
  request: operatorTaskRequestSchema,
  rest: [{ method: 'GET', path: '/operator/tasks/{id}' }],
  restBody: 'none',
  handle: (request, call) => call.service.operator.inspectTask(call, request),
});

/** Cancels any owner's task, recording the operator on it. */
export const cancelOperatorTask = defineUnary({
  name: 'CancelOperatorTask',
  scope: 'a2a:admin',
  request: operatorTaskRequestSchema,
  rest: [{ method: 'POST', path: '/operator/tasks/{id}:cancel' }],
  restBody: 'optional',
  handle: (request, call) => call.service.operator.cancelTask(call, request),
});

/** SubscribeToTask for any owner's task: the same stream (snapshot, then events, Last-Event-ID resume). */
export const subscribeToOperatorTask = defineStream({
  name: 'SubscribeToOperatorTask',
  scope: 'a2a:operator',
  request: operatorTaskRequestSchema,
  rest: [{ method: 'GET', path: '/operator/tasks/{id}:subscribe' }],
  restBody: 'none',
  open: (request, call) => call.service.operator.subscribeToTask(call, request),
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
  open: (_request, call) => call.service.operator.watchTasks(call),
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
