// Push subscriptions (gateway extension, src/extensions/subscriptions.ts): an owner's webhook for
// the events of all their new tasks, or of one context's. Like a task's push configs, every
// method needs a2a:push. Each route is also served under /v1/ (the spelling the gateway's
// subscription API was first given as), below the REST binding's base like every other.
import { z } from 'zod';
import { pushConfigSchema } from '../schemas.ts';
import { unarySpec, type OperationSpec } from './spec.ts';

const tenant = z.string().max(128).optional();
const subscriptionId = z.string().min(1, 'id must not be empty').max(256, 'id is longer than 256 characters');

/** The push fields of a TaskPushNotificationConfig (url, token, authentication) and the filter. */
export const createSubscriptionRequestSchema = pushConfigSchema.pick({ url: true, token: true, authentication: true }).extend({
  tenant,
  contextId: z.string().min(1, 'contextId must not be empty').max(256, 'contextId is longer than 256 characters').optional(),
});
export const subscriptionIdRequestSchema = z.object({ tenant, id: subscriptionId });
export const listSubscriptionsRequestSchema = z.object({ tenant });

export const createSubscription = unarySpec({
  name: 'CreateSubscription',
  scope: 'a2a:push',
  request: createSubscriptionRequestSchema,
  rest: [{ method: 'POST', path: '/subscriptions' }, { method: 'POST', path: '/v1/subscriptions' }],
  restBody: 'required',
});

export const getSubscription = unarySpec({
  name: 'GetSubscription',
  scope: 'a2a:push',
  request: subscriptionIdRequestSchema,
  rest: [{ method: 'GET', path: '/subscriptions/{id}' }, { method: 'GET', path: '/v1/subscriptions/{id}' }],
  restBody: 'none',
});

export const listSubscriptions = unarySpec({
  name: 'ListSubscriptions',
  scope: 'a2a:push',
  request: listSubscriptionsRequestSchema,
  rest: [{ method: 'GET', path: '/subscriptions' }, { method: 'GET', path: '/v1/subscriptions' }],
  restBody: 'none',
});

export const deleteSubscription = unarySpec({
  name: 'DeleteSubscription',
  scope: 'a2a:push',
  request: subscriptionIdRequestSchema,
  rest: [{ method: 'DELETE', path: '/subscriptions/{id}' }, { method: 'DELETE', path: '/v1/subscriptions/{id}' }],
  restBody: 'none',
});

export const SUBSCRIPTION_SPECS: readonly OperationSpec[] = [createSubscription, getSubscription, listSubscriptions, deleteSubscription];
