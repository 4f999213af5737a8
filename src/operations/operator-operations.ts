// The handlers of the operators' operations (src/protocol/operations/operator.ts), answered by the
// gateway handler's operator part (src/tasks/operator-handler.ts): every owner's tasks (listed
// from the recent-tasks index, inspected, watched live, canceled) and the push deliveries that
// were given up on (dead letters), listed and replayed per agent. Both see the caller's own
// tenant, every tenant with a2a:platform besides (src/operator/operator-tasks.ts). The operator
// console (/console/) is built on these.
import * as specs from '../protocol/operations/operator.ts';
import { defineStream, defineUnary } from './definition.ts';

export const listPushDeadLetters = defineUnary(specs.listPushDeadLetters, (request, call) => call.service.operator.listDeadLetters(call, request));

export const replayPushDeadLetter = defineUnary(specs.replayPushDeadLetter, (request, call) => call.service.operator.replayDeadLetter(call, request));

export const listOperatorTasks = defineUnary(specs.listOperatorTasks, (request, call) => call.service.operator.listTasks(call, request));

export const inspectOperatorTask = defineUnary(specs.inspectOperatorTask, (request, call) => call.service.operator.inspectTask(call, request));

export const cancelOperatorTask = defineUnary(specs.cancelOperatorTask, (request, call) => call.service.operator.cancelTask(call, request));

export const subscribeToOperatorTask = defineStream(specs.subscribeToOperatorTask, (request, call) => call.service.operator.subscribeToTask(call, request));

/** Ends after a gap in live delivery; the client re-reads and watches again. */
export const watchOperatorTasks = defineStream(specs.watchOperatorTasks, (_request, call) => call.service.operator.watchTasks(call));

export const OPERATOR_OPERATIONS = [
  listPushDeadLetters,
  replayPushDeadLetter,
  listOperatorTasks,
  inspectOperatorTask,
  cancelOperatorTask,
  subscribeToOperatorTask,
  watchOperatorTasks,
] as const;
