// What the chaos run proves about push notifications, judged from what the receivers recorded
// against each task's own replay buffer (the events stream in Redis) and the operators'
// dead-letter list: every event of every config reached its receiver or is visibly
// dead-lettered (lost = 0), a config's deliveries arrived in the buffer's order (out-of-order =
// 0), one event never came under two delivery ids (a redelivery under the same id is allowed
// and counted) and one id never carried two bodies, every request was signed and carried the
// config's credentials as the spec says. A dead letter is explained only when the receiver
// refused that delivery with a 4xx.
import { setTimeout as sleep } from 'node:timers/promises';
import type { RedisClient } from '../src/redis/connection.ts';
import { compareEventIds } from '../src/events/hub.ts';
import { NOTIFICATION_TOKEN_HEADER, PUSH_CONTENT_TYPE } from '../src/push/delivery.ts';
import type { RedisKeys } from '../src/store/keys.ts';
import type { ReceivedDelivery } from '../test/support/webhook-receiver.ts';
import type { PushRegistration } from './push.ts';

/** A dead letter as ListPushDeadLetters shows it (the fields the judge reads). */
export interface ListedDeadLetter {
  id: string;
  taskId: string;
  eventId: string;
  url: string;
  lastError: string;
}

export interface PushReport {
  tasks: number;
  configs: number;
  configsOnSend: number;
  configsCreated: number;
  /** Events the configs had to deliver (a created config: those after it was added). */
  expected: number;
  requests: number;
  accepted: number;
  /** Accepted again under an id accepted before (a retry whose answer was lost, a worker killed mid-send). */
  redeliveries: number;
  /** Expected events neither accepted by their receiver nor in the dead-letter list. Must be 0. */
  lost: number;
  /** The tasks those belong to. */
  lostTaskIds: string[];
  /** Accepted deliveries of a config that came after a later event of the buffer. Must be 0. */
  outOfOrder: number;
  /** One event accepted under two (or more) delivery ids for one config. Must be 0. */
  newIdDuplicates: number;
  /** One delivery id seen with two different bodies. Must be 0. */
  idsWithTwoBodies: number;
  /** Requests for no registered config, with a body not in their task's buffer, or an event from before the config existed. Must be 0. */
  unexpected: number;
  /** Requests whose v1a (or, for an HMAC config, v1) signature did not verify. Must be 0. */
  badSignatures: number;
  /** Requests without the spec's Content-Type or without the config's token / Authorization header. Must be 0. */
  wrongHeaders: number;
  deadLetters: number;
  /** Dead letters whose receiver never refused that delivery with a 4xx. Must be 0. */
  unexplainedDeadLetters: number;
  /** CreateTaskPushNotificationConfig calls that never succeeded. Must be 0. */
  registrationFailures: number;
  /** How long after the tasks were terminal the deliveries took to settle (ms). */
  settleMs: number;
  problems: string[];
  ok: boolean;
}

/** The push rows of a chaos run: the judgement and how hard the receivers made it. */
export interface ChaosPushResult extends PushReport {
  /** "3 (2 flaky)". */
  receivers: string;
  outages: { count: number; downMs: number };
  /** Misbehaviour the flaky receivers answered, by kind. */
  misbehaviour: Record<string, number>;
}

export interface PushJudgeInput {
  registrations: PushRegistration[];
  /** Every request each path received, in arrival order. */
  deliveriesByPath: Map<string, ReceivedDelivery[]>;
  /** Each configured task's replay buffer (XRANGE of its events stream). */
  buffers: Map<string, { id: string; data: string }[]>;
  deadLetters: ListedDeadLetter[];
}

const accepted = (d: ReceivedDelivery): boolean => typeof d.answered === 'number' && d.answered >= 200 && d.answered < 300;
const refusedForGood = (d: ReceivedDelivery): boolean => typeof d.answered === 'number' && d.answered >= 400 && d.answered < 500 && d.answered !== 408 && d.answered !== 429;

/** The task a StreamResponse is about. */
function taskIdOf(json: Record<string, unknown> | undefined): string | undefined {
  if (json === undefined) return undefined;
  const field = (key: string, id: string): string | undefined => {
    const value = json[key] as Record<string, unknown> | undefined;
    return typeof value?.[id] === 'string' ? (value[id] as string) : undefined;
  };
  return field('statusUpdate', 'taskId') ?? field('artifactUpdate', 'taskId') ?? field('task', 'id') ?? field('message', 'taskId');
}

/** Judges what the receivers got; pure, so the judge itself is tested (test/chaos.test.ts). */
export function judgePush(input: PushJudgeInput): Omit<PushReport, 'settleMs'> {
  const report: Omit<PushReport, 'settleMs'> = {
    tasks: new Set(input.registrations.map((r) => r.taskId)).size,
    configs: input.registrations.length,
    configsOnSend: input.registrations.filter((r) => r.via === 'send').length,
    configsCreated: input.registrations.filter((r) => r.via === 'create').length,
    expected: 0,
    requests: 0,
    accepted: 0,
    redeliveries: 0,
    lost: 0,
    lostTaskIds: [],
    outOfOrder: 0,
    newIdDuplicates: 0,
    idsWithTwoBodies: 0,
    unexpected: 0,
    badSignatures: 0,
    wrongHeaders: 0,
    deadLetters: 0,
    unexplainedDeadLetters: 0,
    registrationFailures: 0,
    problems: [],
    ok: false,
  };
  const problem = (text: string): void => {
    if (report.problems.length < 200) report.problems.push(text);
  };
  const registered = new Map(input.registrations.map((r) => [r.path, r]));
  for (const [path, deliveries] of input.deliveriesByPath) {
    if (!registered.has(path)) {
      report.unexpected += deliveries.length;
      problem(`${deliveries.length} requests to ${path}, which no config names`);
    }
  }
  const lettersByUrl = new Map<string, ListedDeadLetter[]>();
  for (const letter of input.deadLetters) lettersByUrl.set(letter.url, [...(lettersByUrl.get(letter.url) ?? []), letter]);

  for (const registration of input.registrations) {
    const label = `${registration.taskId} ${registration.path}`;
    if (registration.failed !== undefined) {
      report.registrationFailures += 1;
      problem(`${label}: CreateTaskPushNotificationConfig never succeeded: ${registration.failed}`);
      continue;
    }
    const buffer = input.buffers.get(registration.taskId) ?? [];
    const positionOf = new Map(buffer.map((event, i) => [event.data, i]));
    const deliveries = input.deliveriesByPath.get(registration.path) ?? [];
    const letters = (lettersByUrl.get(registration.url) ?? []).filter((l) => l.taskId === registration.taskId);
    report.requests += deliveries.length;

    const idsByPosition = new Map<number, Set<string>>();
    const bodyById = new Map<string, string>();
    const acceptedIds = new Set<string>();
    const acceptedPositions = new Set<number>();
    const refusedIds = new Set<string>();
    let highest = -1;
    for (const d of deliveries) {
      if (d.ed25519Valid !== true || (registration.credentials.kind === 'hmac' && d.hmacValid !== true)) {
        report.badSignatures += 1;
        problem(`${label}: ${d.webhookId} signature did not verify (v1a ${String(d.ed25519Valid)}, v1 ${String(d.hmacValid)})`);
      }
      const wrong = wrongHeader(d, registration);
      if (wrong !== undefined) {
        report.wrongHeaders += 1;
        problem(`${label}: ${d.webhookId} ${wrong}`);
      }
      const earlierBody = bodyById.get(d.webhookId);
      if (earlierBody !== undefined && earlierBody !== d.body) {
        report.idsWithTwoBodies += 1;
        problem(`${label}: delivery id ${d.webhookId} came with two different bodies`);
      }
      bodyById.set(d.webhookId, d.body);
      const position = positionOf.get(d.body);
      if (position === undefined || taskIdOf(d.json) !== registration.taskId) {
        report.unexpected += 1;
        problem(`${label}: ${d.webhookId} carries ${position === undefined ? 'no event of the task\'s buffer' : `an event of task ${taskIdOf(d.json) ?? '?'}`}: ${d.body.slice(0, 120)}`);
        continue;
      }
      const before = registration.startBounds?.before;
      if (before !== undefined && compareEventIds((buffer[position] as { id: string }).id, before) <= 0) {
        report.unexpected += 1;
        problem(`${label}: ${d.webhookId} carries event ${(buffer[position] as { id: string }).id}, from before the config was created`);
      }
      idsByPosition.set(position, (idsByPosition.get(position) ?? new Set()).add(d.webhookId));
      if (refusedForGood(d)) refusedIds.add(d.webhookId);
      if (!accepted(d)) continue;
      report.accepted += 1;
      if (acceptedIds.has(d.webhookId)) {
        report.redeliveries += 1;
        continue;
      }
      acceptedIds.add(d.webhookId);
      acceptedPositions.add(position);
      if (position < highest) {
        report.outOfOrder += 1;
        problem(`${label}: event #${position} (${(buffer[position] as { id: string }).id}) accepted after event #${highest}`);
      }
      highest = Math.max(highest, position);
    }
    for (const [position, ids] of idsByPosition) {
      if (ids.size > 1) {
        report.newIdDuplicates += 1;
        problem(`${label}: event #${position} came under ${ids.size} delivery ids: ${[...ids].join(', ')}`);
      }
    }

    // Where the config's deliveries start: every event for one from SendMessage; for a created
    // one, the first event it received or, at the latest, the first one after it was stored.
    let first = 0;
    if (registration.startBounds !== undefined) {
      const after = registration.startBounds.after;
      const firstAfter = buffer.findIndex((event) => compareEventIds(event.id, after) > 0);
      const firstReceived = Math.min(...idsByPosition.keys(), ...letters.map((l) => buffer.findIndex((e) => e.id === l.eventId)).filter((i) => i >= 0));
      first = Math.min(firstAfter < 0 ? buffer.length : firstAfter, firstReceived);
    }
    const lettered = new Set(letters.map((l) => l.eventId));
    for (let position = first; position < buffer.length; position++) {
      report.expected += 1;
      const event = buffer[position] as { id: string };
      if (acceptedPositions.has(position) || lettered.has(event.id)) continue;
      report.lost += 1;
      if (!report.lostTaskIds.includes(registration.taskId)) report.lostTaskIds.push(registration.taskId);
      problem(`${label}: event #${position} (${event.id}) neither accepted (${idsByPosition.has(position) ? 'tried' : 'never sent'}) nor dead-lettered`);
    }
    for (const letter of letters) {
      report.deadLetters += 1;
      if (!refusedIds.has(letter.id)) {
        report.unexplainedDeadLetters += 1;
        problem(`${label}: dead letter ${letter.id} although its receiver never refused it: ${letter.lastError}`);
      }
    }
  }
  report.ok =
    report.lost === 0 &&
    report.outOfOrder === 0 &&
    report.newIdDuplicates === 0 &&
    report.idsWithTwoBodies === 0 &&
    report.unexpected === 0 &&
    report.badSignatures === 0 &&
    report.wrongHeaders === 0 &&
    report.unexplainedDeadLetters === 0 &&
    report.registrationFailures === 0 &&
    (report.configs === 0 || report.accepted > 0);
  return report;
}

/** What is wrong with one request's headers for its config, if anything. */
function wrongHeader(d: ReceivedDelivery, registration: PushRegistration): string | undefined {
  const contentType = d.headers['content-type'] ?? '';
  if (contentType.split(';')[0]?.trim() !== PUSH_CONTENT_TYPE) return `Content-Type is "${contentType}", not ${PUSH_CONTENT_TYPE}`;
  const token = d.headers[NOTIFICATION_TOKEN_HEADER.toLowerCase()];
  const authorization = d.headers['authorization'];
  const c = registration.credentials;
  if (c.kind === 'token' && token !== c.token) return `${NOTIFICATION_TOKEN_HEADER} is "${token ?? ''}", the config's token is "${c.token}"`;
  if (c.kind === 'hmac' && token !== undefined) return `the config's signing secret was sent as ${NOTIFICATION_TOKEN_HEADER}`;
  if (c.kind === 'authorization' && authorization !== c.header) return `Authorization is "${authorization ?? ''}", the config asks for "${c.header}"`;
  if (c.kind !== 'authorization' && authorization !== undefined) return `an Authorization header the config did not ask for`;
  return undefined;
}

/** The agent's dead letters of one task, from the operators' list (ListPushDeadLetters). */
async function listDeadLetters(gateway: string, taskId: string): Promise<ListedDeadLetter[]> {
  const response = await fetch(`${gateway}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListPushDeadLetters', params: { taskId, pageSize: 1000 } }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await response.json()) as { result?: { deadLetters?: ListedDeadLetter[] }; error?: unknown };
  if (body.result?.deadLetters === undefined) throw new Error(`ListPushDeadLetters for ${taskId} answered ${JSON.stringify(body).slice(0, 300)}`);
  return body.result.deadLetters;
}

/**
 * After the tasks are terminal: waits (bounded) until no expected event is missing, then judges
 * once more with every push task's dead letters.
 */
export async function settleAndJudgePush(options: {
  redis: RedisClient;
  keys: RedisKeys;
  registrations: PushRegistration[];
  deliveriesByPath: () => Map<string, ReceivedDelivery[]>;
  gateway: () => string | undefined;
  timeoutMs: number;
  log: (line: string) => void;
}): Promise<PushReport> {
  const started = Date.now();
  const taskIds = [...new Set(options.registrations.map((r) => r.taskId))];
  const readBuffers = async (): Promise<Map<string, { id: string; data: string }[]>> => {
    const buffers = new Map<string, { id: string; data: string }[]>();
    for (const taskId of taskIds) {
      const events = await options.redis.xrange(options.keys.task(taskId).events, '-', '+');
      buffers.set(taskId, events.map(([id, fields]) => ({ id, data: fields[1] ?? '' })));
    }
    return buffers;
  };
  const readDeadLetters = async (ids: Iterable<string>): Promise<ListedDeadLetter[]> => {
    const letters: ListedDeadLetter[] = [];
    for (const taskId of ids) {
      // A busy machine may drop one call; the list itself must answer.
      for (let attempt = 1; ; attempt++) {
        const gateway = options.gateway();
        try {
          if (gateway === undefined) throw new Error('no gateway is up to list the dead letters');
          letters.push(...(await listDeadLetters(gateway, taskId)));
          break;
        } catch (error) {
          if (attempt >= 5) throw error;
          await sleep(1_000);
        }
      }
    }
    return letters;
  };
  let lastLog = 0;
  for (;;) {
    const buffers = await readBuffers();
    const quick = judgePush({ registrations: options.registrations, deliveriesByPath: options.deliveriesByPath(), buffers, deadLetters: [] });
    // Only tasks with something missing can owe it to a dead letter: ask for theirs.
    const letters = quick.lost === 0 ? [] : await readDeadLetters(quick.lostTaskIds);
    const judged = quick.lost === 0 ? quick : judgePush({ registrations: options.registrations, deliveriesByPath: options.deliveriesByPath(), buffers, deadLetters: letters });
    const timedOut = Date.now() - started > options.timeoutMs;
    if (judged.lost === 0 || timedOut) {
      const settleMs = Date.now() - started;
      options.log(judged.lost === 0 ? `push deliveries settled ${settleMs} ms after the tasks` : `${judged.lost} push deliveries still missing after ${options.timeoutMs} ms`);
      const final = judgePush({ registrations: options.registrations, deliveriesByPath: options.deliveriesByPath(), buffers: await readBuffers(), deadLetters: await readDeadLetters(taskIds) });
      return { ...final, settleMs };
    }
    if (Date.now() - lastLog > 10_000) {
      lastLog = Date.now();
      options.log(`waiting for ${judged.lost} push deliveries`);
    }
    await sleep(500);
  }
}
