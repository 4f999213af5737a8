// The scripts of push delivery (src/store/push/push-store.ts), described for callScript: keys and
// arguments by name in their Lua's order, replies decoded. Each touches one slot: the task's
// (configs, cursors, the outbox step), the push shard's (dead letters) or the receiver's (breaker).
import { arg, defineScript } from './script-call.ts';
import { str } from './script-reply.ts';

export type SaveReply = { kind: 'not-found' } | { kind: 'too-many'; count: number } | { kind: 'saved'; created: boolean };

export const pushSaveConfigScript = defineScript({
  name: 'pushSaveConfig',
  keys: ['task', 'configs', 'cursors', 'events'],
  args: {
    ownerKey: arg.text,
    configId: arg.text,
    /** The stored config, as JSON. */
    config: arg.json<unknown>(),
    maxConfigs: arg.int,
    /** Where a new config's cursor starts: 'begin', 'now' or an event id. */
    cursorStart: arg.text,
  },
  reply: (reply): SaveReply =>
    reply[0] === 'NOT_FOUND' ? { kind: 'not-found' } : reply[0] === 'TOO_MANY' ? { kind: 'too-many', count: Number(reply[1]) } : { kind: 'saved', created: reply[1] === '1' },
});

export const pushReadConfigsScript = defineScript({
  name: 'pushReadConfigs',
  keys: ['task', 'configs'],
  args: { ownerKey: arg.text, configId: arg.optionalText },
  /** The configs' JSON; undefined when the task is not the owner's. */
  reply: (reply): string[] | undefined => (reply[0] === 'NOT_FOUND' ? undefined : reply.slice(1).map(str)),
});

export const pushDeleteConfigScript = defineScript({
  name: 'pushDeleteConfig',
  keys: ['task', 'configs', 'cursors'],
  args: { ownerKey: arg.text, configId: arg.text },
  /** False when the task is not the owner's. */
  reply: (reply): boolean => reply[0] !== 'NOT_FOUND',
});

/** A delivery the outbox step reported: just started, or already in flight. */
export interface PendingDelivery {
  kind: 'new' | 'inflight';
  configId: string;
  eventId: string;
  /** The StreamResponse JSON as stored ('' when it is no longer in the buffer). */
  eventJson: string;
}

export type NextResult = { kind: 'gone' } | { kind: 'ok'; ownerKey: string; drained: boolean; deliveries: PendingDelivery[] };

export const pushNextScript = defineScript({
  name: 'pushNext',
  keys: ['task', 'configs', 'cursors', 'events', 'artifactChunks'],
  args: { startDeliveries: arg.bit },
  reply: (reply): NextResult => {
    if (reply[0] === 'GONE') return { kind: 'gone' };
    const deliveries: PendingDelivery[] = [];
    for (let i = 3; i + 3 < reply.length; i += 4) {
      deliveries.push({ kind: str(reply[i]) as PendingDelivery['kind'], configId: str(reply[i + 1]), eventId: str(reply[i + 2]), eventJson: str(reply[i + 3]) });
    }
    return { kind: 'ok', drained: reply[1] === '1', ownerKey: str(reply[2]), deliveries };
  },
});

export const pushDeliveryStateScript = defineScript({
  name: 'pushDeliveryState',
  keys: ['configs', 'cursors'],
  args: { configId: arg.text },
  /** `configJson` is '' when the config is gone. */
  reply: (reply): { configJson: string; settledEventId: string; inflightEventId: string } => ({
    configJson: str(reply[0]),
    settledEventId: str(reply[1]),
    inflightEventId: str(reply[2]),
  }),
});

export const pushSettleScript = defineScript({
  name: 'pushSettle',
  keys: ['configs', 'cursors', 'events'],
  args: {
    configId: arg.text,
    eventId: arg.text,
    outcome: (value: 'delivered' | 'dead' | 'gone') => value,
    /** What a 'gone' outcome disables the config with (null otherwise). */
    disabled: arg.json<unknown>(),
  },
  /** The config's next event, now in flight, when there is one. */
  reply: (reply): { eventId: string; eventJson: string } | undefined =>
    reply[0] !== 'SETTLED' || reply[1] === undefined ? undefined : { eventId: str(reply[1]), eventJson: str(reply[2]) },
});

export const pushDeadLetterScript = defineScript({
  name: 'pushDeadLetter',
  keys: ['deadLetters', 'deadLetterIndex'],
  args: { id: arg.text, letter: arg.json<unknown>(), deadAtMs: arg.int, maxPerShard: arg.int },
  /** Dead letters dropped to stay within the shard's bound. */
  reply: (reply): number => Number(reply[1] ?? 0),
});

export const pushRemoveDeadLetterScript = defineScript({
  name: 'pushRemoveDeadLetter',
  keys: ['deadLetters', 'deadLetterIndex'],
  args: { id: arg.text },
  reply: (reply): boolean => reply[1] === '1',
});

export type BreakerAction = 'admit' | 'success' | 'failure';

export const pushBreakerScript = defineScript({
  name: 'pushBreaker',
  keys: ['breaker'],
  args: {
    action: (value: BreakerAction) => value,
    nowMs: arg.int,
    threshold: arg.int,
    cooldownMs: arg.int,
    probeMs: arg.int,
    /** How long the breaker is kept after its last change (ms). */
    keepMs: arg.int,
  },
  reply: (reply): { allow: boolean; untilMs: number | undefined; failures: number } =>
    reply[0] === 'ALLOW'
      ? { allow: true, untilMs: undefined, failures: Number(reply[1] ?? 0) }
      : { allow: reply[0] === 'CLOSED', untilMs: reply[1] === undefined || reply[1] === null ? undefined : Number(reply[1]), failures: 0 },
});
