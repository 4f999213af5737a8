// The delivery-guarantees extension: the card states what this gateway promises about a task's
// life and delivery, with the figures of this deployment's configuration, so a client can plan
// its reconnects and retries from the card instead of from documentation. A statement is here
// only when a test backs it: each statement's id appears, as `[guarantee:<id>]`, in the title of
// the tests that prove it, and test/delivery-guarantees.test.ts fails for a statement without one.
import type { GatewayConfig } from '../config/schema.ts';
import type { JsonObject } from '../protocol/types.ts';
import type { ExtensionDeclaration } from './definition.ts';

export const DELIVERY_GUARANTEES_URI = 'urn:a2a-gateway:ext:delivery-guarantees:v1';

/** One promise: what holds, and the settings that bound it here. */
export interface GuaranteeStatement extends JsonObject {
  id: string;
  holds: string;
  bounds: JsonObject;
}

/** The statements, with this configuration's figures. */
export function guaranteeStatements(config: GatewayConfig): GuaranteeStatement[] {
  const statements: GuaranteeStatement[] = [
    {
      id: 'task.durable',
      holds:
        'An accepted task is stored before it is announced and outlives the request: a closed connection does not stop it, and a turn whose ' +
        'worker dies is taken over by another worker (attempts carried) until maxTurnAttempts, after which the task fails with the reason.',
      bounds: { maxTurnAttempts: config.maxTurnAttempts, retentionSeconds: config.retentionSeconds },
    },
    {
      id: 'send.idempotent',
      holds:
        'SendMessage is idempotent by (caller, messageId): the same message sent again, in sequence or concurrently, makes one task and one ' +
        'turn and is answered with that task; the same id with other content is refused.',
      bounds: { idempotencyTtlSeconds: config.idempotencyTtlSeconds },
    },
    {
      id: 'stream.replay',
      holds:
        "Every event of a task has an id; every stream of the task sees the same events in the same order. A dropped stream resumes with " +
        'SubscribeToTask and Last-Event-ID: exactly the events after that id, then live ones. Resumed from before the replay buffer, the ' +
        'stream starts with the task as it is (a snapshot) and a REPLAY_BUFFER_TRIMMED note.',
      bounds: { maxEvents: config.replay.maxEvents, maxAgeSeconds: config.replay.maxAgeSeconds, maxBytes: config.replay.maxBytes },
    },
    {
      id: 'turn.steps-once',
      holds:
        "A step an agent runs through the step journal runs once across a turn's attempts: a finished step is replayed from the journal, " +
        'and a step cut off mid-way is handed to the next attempt as of unknown outcome, never run again silently.',
      bounds: {},
    },
  ];
  if (config.push.enabled) {
    statements.push({
      id: 'push.at-least-once',
      holds:
        'Each event of a task reaches each push config at least once, in order, signed (Standard Webhooks, Ed25519) and under one ' +
        'webhook-id across retries, so a receiver can de-duplicate; failures are retried with backoff until the horizon, then ' +
        'dead-lettered, where an operator can replay them.',
      bounds: {
        retryInitialDelayMs: config.push.retryInitialDelayMs,
        retryMaxDelayMs: config.push.retryMaxDelayMs,
        retryHorizonMs: config.push.retryHorizonMs,
        timeoutMs: config.push.timeoutMs,
      },
    });
  }
  return statements;
}

/** The card's declaration of the extension (no methods: it only states). */
export function deliveryGuaranteesDeclaration(config: GatewayConfig): ExtensionDeclaration {
  return {
    uri: DELIVERY_GUARANTEES_URI,
    description:
      "What this gateway guarantees about a task's life and delivery, each statement with the settings that bound it here " +
      '(params.statements: {id, holds, bounds}). Nothing to activate: it only states.',
    required: false,
    params: { statements: guaranteeStatements(config) },
  };
}
