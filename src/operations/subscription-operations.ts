// The handlers of the subscriptions extension's methods (src/protocol/operations/subscriptions.ts).
import { A2AError } from '../protocol/errors.ts';
import * as specs from '../protocol/operations/subscriptions.ts';
import type { SubscriptionService } from '../push/subscriptions.ts';
import type { GatewayHandler } from '../tasks/gateway-handler.ts';
import { defineUnary } from './definition.ts';

/** The subscription service, or PushNotificationNotSupportedError when this gateway sends no push notifications. */
function subscriptions(service: GatewayHandler): SubscriptionService {
  if (service.subscriptions === undefined) {
    throw new A2AError('PUSH_NOTIFICATION_NOT_SUPPORTED', 'This gateway sends no push notifications (push.enabled is false), so it offers no subscriptions.');
  }
  return service.subscriptions;
}

export const createSubscription = defineUnary(specs.createSubscription, (request, call) => subscriptions(call.service).create(call.owner, request));

export const getSubscription = defineUnary(specs.getSubscription, (request, call) => subscriptions(call.service).get(call.owner, request.id));

export const listSubscriptions = defineUnary(specs.listSubscriptions, (_request, call) => subscriptions(call.service).list(call.owner));

export const deleteSubscription = defineUnary(specs.deleteSubscription, (request, call) => subscriptions(call.service).delete(call.owner, request.id));

export const SUBSCRIPTION_OPERATIONS = [createSubscription, getSubscription, listSubscriptions, deleteSubscription] as const;
