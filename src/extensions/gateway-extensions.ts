// Every extension this gateway implements. Adding one: declare it with defineExtension (its
// methods with defineUnary / defineStream) in a file of its own and list it here; the registry,
// both bindings, the scope check, the cards and the openapi.yaml agreement test pick it up.
import { assignmentsExtension } from './assignments.ts';
import type { GatewayExtension } from './definition.ts';
import { schedulesExtension } from './schedules.ts';
import { subscriptionsExtension } from './subscriptions.ts';
import { verificationExtension } from './verification.ts';

export const GATEWAY_EXTENSIONS: readonly GatewayExtension[] = [assignmentsExtension, schedulesExtension, subscriptionsExtension, verificationExtension];
