// The operators' operations (src/operations/operator-operations.ts) as use cases: every owner's
// tasks (listed, inspected, followed, canceled), every task's live events, and the push
// deliveries given up on. Who may see which tenant is decided in src/operator/operator-tasks.ts.
import type { LiveEvent } from '../events/hub.ts';
import { spansEveryTenant } from '../auth/scopes.ts';
import type { StreamPlan } from '../operations/stream-plan.ts';
import { OperatorTasks, operatorTenants, type OperatorListRequest, type OperatorListResponse, type OperatorTaskView } from '../operator/operator-tasks.ts';
import { A2AError } from '../protocol/errors.ts';
import { isTerminal, type Task } from '../protocol/types.ts';
import type { DeadLetterView, PushDeadLetters } from '../push/dead-letters.ts';
import type { Owner, TaskStore } from '../store/task-store.ts';
import type { Caller } from './a2a-handler.ts';
import { pushNotSupported } from './push-config-handlers.ts';
import { subscriptionStart } from './subscribe.ts';
import type { TaskEvents } from './task-events.ts';

export interface OperatorHandlerDeps {
  store: TaskStore;
  events: TaskEvents;
  pushDeadLetters: PushDeadLetters | undefined;
  /** The owners' CancelTask, with the operator recorded on the task. */
  cancelTask(owner: Owner, request: { id: string }, requestedBy?: string): Promise<Task>;
}

export class OperatorHandler {
  private readonly tasks: OperatorTasks;

  constructor(private readonly deps: OperatorHandlerDeps) {
    this.tasks = new OperatorTasks({ store: deps.store, pushDeadLetters: deps.pushDeadLetters, cancelTask: deps.cancelTask });
  }

  private deadLetters(): PushDeadLetters {
    if (this.deps.pushDeadLetters === undefined) throw pushNotSupported();
    return this.deps.pushDeadLetters;
  }

  listDeadLetters(caller: Caller, request: { taskId?: string; pageSize?: number }): Promise<{ deadLetters: DeadLetterView[] }> {
    return this.deadLetters().list(caller.owner.agent, request, operatorTenants(caller.principal));
  }

  replayDeadLetter(caller: Caller, request: { id: string }): ReturnType<PushDeadLetters['replay']> {
    return this.deadLetters().replay(caller.owner.agent, request.id, operatorTenants(caller.principal));
  }

  listTasks(caller: Caller, request: OperatorListRequest): Promise<OperatorListResponse> {
    return this.tasks.list(caller.principal, request);
  }

  inspectTask(caller: Caller, request: { id: string }): Promise<OperatorTaskView> {
    return this.tasks.inspect(caller.principal, request.id);
  }

  cancelTask(caller: Caller, request: { id: string }): Promise<Task> {
    return this.tasks.cancel(caller.principal, request.id);
  }

  /** SubscribeToTask for any owner's task in the operator's reach: snapshot, then events, Last-Event-ID resume. */
  async subscribeToTask(caller: Caller, request: { id: string }): Promise<StreamPlan> {
    const owner = await this.tasks.ownerOf(caller.principal, request.id);
    const start = await subscriptionStart(this.deps.store, owner, request, caller.lastEventId, caller.answersSpliced === true);
    return { taskId: request.id, snapshot: start.snapshot, afterId: start.afterId, closesOn: isTerminal, alreadyEnded: start.terminal };
  }

  /** Every task's events as this gateway receives them, live: the plan of the watch stream (followed by watchEveryTask). */
  watchTasks(caller: Caller): Promise<StreamPlan> {
    // Events carry no owner, so a stream of every task is for platform operators only.
    if (!spansEveryTenant(caller.principal)) {
      throw new A2AError('PERMISSION_DENIED', 'WatchOperatorTasks streams every tenant\'s events, so it needs the scope "a2a:platform" besides "a2a:operator"; these credentials see their own tenant only. Read ListOperatorTasks again instead.', {
        metadata: { reason: 'TENANT_MISMATCH' },
      });
    }
    if (!this.deps.events.watchesEveryTask) {
      throw new A2AError('UNSUPPORTED_OPERATION', 'WatchOperatorTasks needs one subscription that hears every task, which Redis Cluster (sharded pub/sub) does not offer. Poll ListOperatorTasks instead, or SubscribeToTask for the tasks to follow.', {
        metadata: { reason: 'CLUSTER_MODE' },
      });
    }
    return Promise.resolve({ taskId: '', snapshot: undefined, afterId: '', closesOn: () => false, alreadyEnded: false, everyTask: true });
  }

  /** The events of a watch stream: every task's, live, until a gap in delivery or a lost connection; returns the stop. */
  watchEveryTask(onEvent: (event: LiveEvent) => void, onGap: () => void, onLost: (error: Error) => void): () => void {
    return this.deps.events.watchEveryTask(onEvent, onGap, onLost);
  }
}
