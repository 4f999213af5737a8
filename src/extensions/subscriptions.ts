// The subscriptions extension: one webhook for the events of all the caller's new tasks with this
// agent, or of one context's, delivered like push notifications (src/push/subscriptions.ts).
import { SUBSCRIPTION_SPECS } from '../protocol/operations/subscriptions.ts';
import { defineExtension } from './definition.ts';

export const SUBSCRIPTIONS_EXTENSION_URI = 'urn:a2a-gateway:ext:subscriptions:v1';

export const subscriptionsExtension = defineExtension({
  uri: SUBSCRIPTIONS_EXTENSION_URI,
  description:
    'Subscriptions: a webhook that gets the events of every task of yours created after it, or of one context, signed, retried and dead-lettered like push notifications. ' +
    'JSON-RPC methods CreateSubscription, GetSubscription, ListSubscriptions, DeleteSubscription; HTTP+JSON routes under /subscriptions (see openapi.yaml).',
  required: false,
  methods: SUBSCRIPTION_SPECS,
});
