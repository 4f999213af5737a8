// The handlers of the operators' operations (src/protocol/operations/operator.ts): every owner's
// tasks (listed from the recent-tasks index, inspected, watched live, canceled) and the push
// deliveries that were given up on (dead letters), listed and replayed per agent. Both see the
// caller's own tenant, every tenant with a2a:platform besides (src/operator/operator-tasks.ts).
// The operator console (/console/) is built on these.
import { A2AError } from '../protocol/errors.ts';
import { isTerminal } from '../protocol/types.ts';
import * as specs from '../protocol/operations/operator.ts';
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

export const listPushDeadLetters = defineUnary(specs.listPushDeadLetters, (request, call) =>
  deadLetters(call.service).list(call.owner.agent, request, operatorTenants(call.principal)),
);

export const replayPushDeadLetter = defineUnary(specs.replayPushDeadLetter, (request, call) =>
  deadLetters(call.service).replay(call.owner.agent, request.id, operatorTenants(call.principal)),
);

export const listOperatorTasks = defineUnary(specs.listOperatorTasks, (request, call) => operatorTasksOf(call.service).list(call.principal, request));

export const inspectOperatorTask = defineUnary(specs.inspectOperatorTask, (request, call) => operatorTasksOf(call.service).inspect(call.principal, request.id));

export const cancelOperatorTask = defineUnary(specs.cancelOperatorTask, (request, call) => operatorTasksOf(call.service).cancel(call.principal, request.id));

export const subscribeToOperatorTask = defineStream(specs.subscribeToOperatorTask, async (request, call) => {
  const owner = await operatorTasksOf(call.service).ownerOf(call.principal, request.id);
  const plan = await call.service.subscribe(owner, request, call.lastEventId);
  return { taskId: request.id, snapshot: plan.snapshot, afterId: plan.afterId, closesOn: isTerminal, alreadyEnded: plan.terminal };
});

/** Ends after a gap in live delivery; the client re-reads and watches again. */
export const watchOperatorTasks = defineStream(specs.watchOperatorTasks, (_request, call) => {
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
