// Everything the gateway's faces call: the A2A operations (./a2a-handler.ts) and this gateway's
// own methods beside them (the assignments and schedules extensions, the operators' methods).
import type { ScheduleService } from '../schedules/schedule-service.ts';
import type { SubscriptionService } from '../push/subscriptions.ts';
import type { Owner } from '../store/task-store.ts';
import type { A2AHandler } from './a2a-handler.ts';
import type { AssignmentView } from './assignment-views.ts';
import type { OperatorHandler } from './operator-handler.ts';

export interface GatewayHandler extends A2AHandler {
  /** ListTaskAssignments (assignments extension): a coordinator's assignments. */
  listAssignments(owner: Owner, taskId: string): Promise<{ taskId: string; assignments: AssignmentView[] }>;
  /** The schedules extension's use cases; undefined when schedules are off. */
  readonly schedules: ScheduleService | undefined;
  /** The subscriptions extension's use cases; undefined when push notifications are off. */
  readonly subscriptions: SubscriptionService | undefined;
  readonly operator: OperatorHandler;
}
