// The chaos run's client load: SendMessage "transfer <k>" with returnImmediately, spread over
// the live gateways, interleaved with "fanout" coordinators whose assignments are transfers. A request that fails in transit (gateway killed, Redis restarting) is
// sent again with the SAME messageId to any gateway: the gateway de-duplicates by messageId,
// so a retry can never start a second task. An id counts as "submitted" only once a gateway
// returned it: that is the promise the run checks afterwards.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Random } from './random.ts';

export interface SubmittedTask {
  index: number;
  messageId: string;
  charges: number;
  taskId: string;
  /** Requests it took (1 = no retry). */
  requests: number;
}

/** A fanout coordinator: each assignment is a child task "transfer <charges[i]>". */
export interface SubmittedCoordinator {
  index: number;
  messageId: string;
  /** Charges of assignment i (its child task runs "transfer <charges[i]>"). */
  charges: number[];
  taskId: string;
  requests: number;
}

export interface LoadResult {
  submitted: SubmittedTask[];
  /** Coordinators whose id came back (their abandoned / refused submissions are in the lists below). */
  coordinators: SubmittedCoordinator[];
  /** Tasks given up on (never got an id back within the bound); their messageIds, for evidence. */
  abandoned: string[];
  /** Answers that were not retryable (a bug in the run or in the gateway). */
  refused: { messageId: string; answer: string }[];
  /** Retries by what made them necessary. */
  retriesByCause: Record<string, number>;
  /** The longest single SendMessage request (ms): a Redis outage should fail requests fast, not stall them. */
  slowestRequestMs: number;
}

export interface LoadOptions {
  tasks: number;
  seed: number;
  random: Random;
  /** Mean pause between two submissions; each pause is uniform in [0, 2 × mean]. */
  intervalMs: number;
  /** Base URLs of the gateways that are up now (changes while gateways are killed). */
  gateways: () => string[];
  /** Called as soon as a task id came back (the stream watcher subscribes to some). */
  onSubmitted?: (task: SubmittedTask) => void;
  /** More SendMessage configuration for transfer i (e.g. its taskPushNotificationConfig). */
  configurationFor?: (index: number) => Record<string, unknown> | undefined;
  /** Fanout coordinators to interleave with the transfers (0: none). */
  coordinators?: number;
  /** Called as soon as a coordinator's id came back. */
  onCoordinatorSubmitted?: (coordinator: SubmittedCoordinator) => void;
  /** How long one submission may keep retrying before it is abandoned. */
  submitTimeoutMs?: number;
  /** Stops submitting new tasks (in-flight ones finish their retries). */
  signal?: AbortSignal;
}

/** What one HTTP attempt ended in. */
type Attempt = { kind: 'ok'; taskId: string } | { kind: 'retry'; cause: string } | { kind: 'refused'; answer: string };

export function transferMessage(messageId: string, text: string, taskId?: string): Record<string, unknown> {
  const message: Record<string, unknown> = { messageId, role: 'ROLE_USER', parts: [{ text }] };
  if (taskId !== undefined) message['taskId'] = taskId;
  return message;
}

export const COORDINATOR_ASSIGNMENTS = 3;
export const COORDINATOR_MAX_PARALLEL = 2;

/** "fanout" with a data part spelling out one specialist assignment "transfer <n>" per charge count. */
export function coordinatorMessage(messageId: string, charges: readonly number[]): Record<string, unknown> {
  const assignments = charges.map((n) => ({ role: 'specialist', text: `transfer ${n}` }));
  return {
    messageId,
    role: 'ROLE_USER',
    parts: [{ text: 'fanout' }, { data: { assignments, maxParallel: COORDINATOR_MAX_PARALLEL, review: false }, mediaType: 'application/json' }],
  };
}

/** One JSON-RPC SendMessage; classifies the answer as done, retryable or refused. */
export async function sendOnce(gateway: string, message: Record<string, unknown>, timeoutMs = 10_000, configuration: Record<string, unknown> = {}): Promise<Attempt> {
  let response: Response;
  try {
    response = await fetch(`${gateway}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: String(message['messageId']), method: 'SendMessage', params: { message, configuration: { ...configuration, returnImmediately: true } } }),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
    return { kind: 'retry', cause: `transport ${cause}` };
  }
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    return { kind: 'retry', cause: `body ${(error as Error).name}` };
  }
  if (response.status >= 500) return { kind: 'retry', cause: `HTTP ${response.status}` };
  let body: { result?: { task?: { id?: string } }; error?: { code?: number; message?: string } };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    return { kind: 'refused', answer: `HTTP ${response.status} ${text.slice(0, 200)}` };
  }
  const taskId = body.result?.task?.id;
  if (typeof taskId === 'string') return { kind: 'ok', taskId };
  // -32603 is both InternalError and the JSON-RPC face of UNAVAILABLE: a store hiccup. A retry
  // with the same messageId is safe either way.
  if (body.error?.code === -32603) return { kind: 'retry', cause: `JSON-RPC -32603` };
  return { kind: 'refused', answer: `HTTP ${response.status} ${text.slice(0, 300)}` };
}

/** Sends one message until a gateway returns a task id, bounded in attempts and time. */
export async function submitWithRetry(
  message: Record<string, unknown>,
  gateways: () => string[],
  random: Random,
  timeoutMs: number,
  onRetry: (cause: string) => void,
  onRequestMs: (ms: number) => void = () => undefined,
  configuration: Record<string, unknown> = {},
): Promise<{ taskId: string; requests: number } | { refused: string } | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (let request = 1; request <= 200 && Date.now() < deadline; request++) {
    const live = gateways();
    if (live.length === 0) {
      onRetry('no gateway up');
      await sleep(200);
      continue;
    }
    const sentAt = Date.now();
    const attempt = await sendOnce(random.pick(live), message, 10_000, configuration);
    onRequestMs(Date.now() - sentAt);
    if (attempt.kind === 'ok') return { taskId: attempt.taskId, requests: request };
    if (attempt.kind === 'refused') return { refused: attempt.answer };
    onRetry(attempt.cause);
    await sleep(Math.min(2_000, 100 * request) + random.int(0, 100));
  }
  return undefined;
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const { random } = options;
  const result: LoadResult = { submitted: [], coordinators: [], abandoned: [], refused: [], retriesByCause: {}, slowestRequestMs: 0 };
  const onRetry = (cause: string): void => {
    result.retriesByCause[cause] = (result.retriesByCause[cause] ?? 0) + 1;
  };
  const onRequestMs = (ms: number): void => {
    result.slowestRequestMs = Math.max(result.slowestRequestMs, ms);
  };
  const inFlight: Promise<void>[] = [];

  // Coordinators come from their own fork (forking does not advance `random`), so the transfer
  // sequence of a seed is the same with or without them. Coordinator j is sent right after
  // transfer p_j, one in each of `coordinators` equal slices of the load, at a seeded spot in it.
  const coordinatorRandom = random.fork('coordinators');
  const coordinatorCount = Math.max(0, Math.floor(options.coordinators ?? 0));
  const schedule = Array.from({ length: coordinatorCount }, (_, j) => ({
    j,
    after: Math.floor(((j + coordinatorRandom.next()) * options.tasks) / coordinatorCount),
    charges: Array.from({ length: COORDINATOR_ASSIGNMENTS }, () => coordinatorRandom.int(1, 3)),
  }));
  let nextCoordinator = 0;
  const submitCoordinator = (j: number, charges: number[]): void => {
    const pickRandom = random.fork(`coordinator-${j}`);
    const messageId = `chaos-${options.seed}-coordinator-${j}`;
    inFlight.push(
      (async () => {
        const outcome = await submitWithRetry(coordinatorMessage(messageId, charges), options.gateways, pickRandom, options.submitTimeoutMs ?? 60_000, onRetry, onRequestMs);
        if (outcome === undefined) result.abandoned.push(messageId);
        else if ('refused' in outcome) result.refused.push({ messageId, answer: outcome.refused });
        else {
          const coordinator: SubmittedCoordinator = { index: j, messageId, charges, taskId: outcome.taskId, requests: outcome.requests };
          result.coordinators.push(coordinator);
          options.onCoordinatorSubmitted?.(coordinator);
        }
      })(),
    );
  };
  const submitCoordinatorsUpTo = (index: number): void => {
    for (let next = schedule[nextCoordinator]; next !== undefined && next.after <= index; next = schedule[nextCoordinator]) {
      if (options.signal?.aborted) return;
      submitCoordinator(next.j, next.charges);
      nextCoordinator += 1;
    }
  };

  for (let index = 0; index < options.tasks; index++) {
    if (options.signal?.aborted) break;
    // Drawn in submission order, before any await that depends on timing, so the sequence of
    // charges and gateway picks is the same for the same seed.
    const charges = random.int(1, 5);
    const pickRandom = random.fork(`task-${index}`);
    const messageId = `chaos-${options.seed}-${index}`;
    const configuration = options.configurationFor?.(index) ?? {};
    inFlight.push(
      (async () => {
        const outcome = await submitWithRetry(transferMessage(messageId, `transfer ${charges}`), options.gateways, pickRandom, options.submitTimeoutMs ?? 60_000, onRetry, onRequestMs, configuration);
        if (outcome === undefined) result.abandoned.push(messageId);
        else if ('refused' in outcome) result.refused.push({ messageId, answer: outcome.refused });
        else {
          const task: SubmittedTask = { index, messageId, charges, taskId: outcome.taskId, requests: outcome.requests };
          result.submitted.push(task);
          options.onSubmitted?.(task);
        }
      })(),
    );
    submitCoordinatorsUpTo(index);
    await sleep(random.int(0, 2 * options.intervalMs));
  }
  // With no transfers at all, the coordinators are the load.
  submitCoordinatorsUpTo(Number.POSITIVE_INFINITY);
  await Promise.all(inFlight);
  result.submitted.sort((a, b) => a.index - b.index);
  result.coordinators.sort((a, b) => a.index - b.index);
  return result;
}
