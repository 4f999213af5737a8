// A push-notification config as the gateway stores it, and as A2A returns it.
import type { TaskPushNotificationConfig } from '../protocol/types.ts';

export interface StoredPushConfig {
  id: string;
  taskId: string;
  url: string;
  token?: string;
  authentication?: { scheme: string; credentials?: string };
  createdAtMs: number;
  /** Set when the receiver answered 410 Gone: nothing more is sent until the config is created again. */
  disabled?: { atMs: number; status: number; reason: string; deliveryId: string };
}

export function configView(config: StoredPushConfig, tenant: string | undefined): TaskPushNotificationConfig {
  const view: TaskPushNotificationConfig = { id: config.id, taskId: config.taskId, url: config.url };
  if (tenant !== undefined && tenant !== '') view.tenant = tenant;
  if (config.token !== undefined) view.token = config.token;
  if (config.authentication !== undefined) view.authentication = config.authentication;
  return view;
}
