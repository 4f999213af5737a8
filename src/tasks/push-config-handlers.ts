// The four push-config operations (spec 3.1.7 – 3.1.10): the owner's configs of one task, or
// PushNotificationNotSupportedError when push notifications are off (push.enabled false).
import { A2AError } from '../protocol/errors.ts';
import type { TaskPushNotificationConfig } from '../protocol/types.ts';
import type { PushConfigs } from '../push/push-configs.ts';
import type { Caller, CreatePushConfigRequest, ListPushConfigsRequest, PushConfigRequest } from './a2a-handler.ts';

/** PushNotificationNotSupportedError: push is off (push.enabled false). */
export const pushNotSupported = (): A2AError =>
  new A2AError(
    'PUSH_NOTIFICATION_NOT_SUPPORTED',
    'This agent does not send push notifications (capabilities.pushNotifications is false). Use SubscribeToTask or GetTask to follow a task.',
  );

export class PushConfigHandlers {
  constructor(private readonly push: PushConfigs | undefined) {}

  /** The caller was admitted first, like for any operation; only then is push being off the answer. */
  private configs(): PushConfigs {
    if (this.push === undefined) throw pushNotSupported();
    return this.push;
  }

  create(caller: Caller, request: CreatePushConfigRequest): Promise<TaskPushNotificationConfig> {
    return this.configs().create(caller.owner, request);
  }

  get(caller: Caller, request: PushConfigRequest): Promise<TaskPushNotificationConfig> {
    return this.configs().get(caller.owner, request);
  }

  list(caller: Caller, request: ListPushConfigsRequest): Promise<{ configs: TaskPushNotificationConfig[]; nextPageToken: string }> {
    return this.configs().list(caller.owner, request);
  }

  delete(caller: Caller, request: PushConfigRequest): Promise<Record<string, never>> {
    return this.configs().delete(caller.owner, request);
  }
}
