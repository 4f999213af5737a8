// A push-notification config as the gateway stores it, and as A2A returns it. Its secrets (the
// token, the authentication credentials) are write-only: no read returns them, not even the
// answer to the call that stored them, which the caller already holds; a read shows that one
// is set, and of which kind, by a mask.
import type { TaskPushNotificationConfig } from '../protocol/types.ts';
import { HMAC_SECRET_PREFIX, isHmacSecret } from './webhook-signature.ts';

export interface StoredPushConfig {
  id: string;
  taskId: string;
  url: string;
  token?: string;
  authentication?: { scheme: string; credentials?: string };
  createdAtMs: number;
  /** Set when the receiver answered 410 Gone: nothing more is sent until the config is created again. */
  disabled?: { atMs: number; status: number; reason: string; deliveryId: string };
  /** Set on a config a subscription put on the task (src/push/subscription-configs.ts): whose, and which. */
  subscription?: { id: string; ownerKey: string };
}

/** What a read shows in place of a secret. */
export const SECRET_MASK = '********';

/** The mask of a token: a signing secret keeps its prefix, so a reader knows deliveries are HMAC-signed. */
export const maskedToken = (token: string): string => (isHmacSecret(token) ? `${HMAC_SECRET_PREFIX}${SECRET_MASK}` : SECRET_MASK);

/** True for a value that is a mask as reads show it (sent back, it would replace the secret with the mask). */
export const isMasked = (value: string | undefined): boolean => value === SECRET_MASK || value === `${HMAC_SECRET_PREFIX}${SECRET_MASK}`;

export function configView(config: StoredPushConfig, tenant: string | undefined): TaskPushNotificationConfig {
  const view: TaskPushNotificationConfig = { id: config.id, taskId: config.taskId, url: config.url };
  if (tenant !== undefined && tenant !== '') view.tenant = tenant;
  if (config.token !== undefined) view.token = maskedToken(config.token);
  if (config.authentication !== undefined) {
    view.authentication = { scheme: config.authentication.scheme };
    if (config.authentication.credentials !== undefined) view.authentication.credentials = SECRET_MASK;
  }
  return view;
}
