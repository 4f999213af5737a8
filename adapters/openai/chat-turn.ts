// One turn of the openai adapter: build the conversation, call the model (retrying what the
// retry policy allows, each retry replacing the partial reply), stream the reply into the
// turn's artifact, account for the tokens, and decide how the turn ends.
import type { JsonObject, JsonValue, Part } from '../../src/protocol/types.ts';
import type { AdapterContext, TurnOutcome } from '../types.ts';
import { ASK_USER, ASK_USER_TOOL, questionOf } from './ask-user.ts';
import { buildConversation, noticePart } from './chat-messages.ts';
import { callModel, type ChatRequest, type ModelReply } from './model-call.ts';
import type { OpenAIAdapterOptions } from './options.ts';
import { ReplyWriter } from './reply-writer.ts';
import { decideRetry, describeFailure, formatMs, sleep } from './retry-policy.ts';
import type { EndpointChoice, EndpointRouter } from './endpoint-router.ts';
import { endpointFault, noteCoolDown, noteFallback, type EndpointFault } from './fallback.ts';
import type { ModelEndpoint } from './model-endpoints.ts';
import { logFailure } from '../../src/logging/operator-failures.ts';

/** The adapterState key of the finished reply of the turn in progress (see replayFinished). */
const FINISHED_REPLY_KEY = 'openai.finishedReply';
/** Larger finished replies are not kept (adapterState values are at most 64 KiB of JSON). */
const MAX_KEPT_REPLY_BYTES = 60 * 1024;

export interface ChatTurnDeps {
  options: OpenAIAdapterOptions;
  /** The agent's endpoints (one for baseURL) and their health in this process. */
  router: EndpointRouter<ModelEndpoint>;
}

/** A fresh caller token per call, for that endpoint's origin (a retried call may come after the previous token expired). */
async function callerHeaders(ctx: AdapterContext, endpoint: ModelEndpoint): Promise<Record<string, string>> {
  return endpoint.caller === undefined ? {} : { [endpoint.caller.tokens.header]: await endpoint.caller.tokens.token(ctx, endpoint.caller.origin) };
}

/** The artifact a turn's reply goes to: one per turn, so a later turn never replaces an earlier reply. */
export function replyArtifactId(turn: number): string {
  return `reply-${turn}`;
}

/** What a finished turn leaves for a later attempt of the same turn (a worker lost before the turn was stored). */
interface FinishedReply {
  turn: number;
  outcome: TurnOutcome;
}

function failed(text: string): TurnOutcome {
  return { state: 'failed', message: [noticePart(text, 'error')] };
}

/** Rough token count (4 characters a token) for servers that report no usage. */
function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

function outcomeOf(reply: ModelReply, askUser: boolean): TurnOutcome {
  const question = askUser ? reply.toolCalls.find((call) => call.name === ASK_USER) : undefined;
  if (question !== undefined) return { state: 'input-required', message: questionOf(question, reply.text) };
  const other = reply.toolCalls.find((call) => call.name !== ASK_USER);
  if (other !== undefined && reply.text.trim() === '') {
    return failed(`The model called the tool "${other.name}", which this agent does not offer; it wrote no reply.`);
  }
  const notice =
    reply.finishReason === 'length'
      ? 'The reply was cut off: the model reached its token limit (finish_reason "length"). Ask it to continue, or raise maxTokens.'
      : reply.finishReason === 'content_filter'
        ? "The reply was stopped by the model server's content filter (finish_reason \"content_filter\")."
        : undefined;
  if (notice === undefined) return reply.text === '' ? { state: 'completed' } : { state: 'completed', message: reply.text };
  const parts: Part[] = reply.text === '' ? [] : [{ text: reply.text }];
  parts.push(noticePart(notice, 'truncated'));
  return { state: 'completed', message: parts };
}

export async function runChatTurn(ctx: AdapterContext, deps: ChatTurnDeps): Promise<TurnOutcome> {
  const { options } = deps;
  const artifactId = replyArtifactId(ctx.turn);
  // A partial reply of an earlier attempt of this turn (its worker was lost) is replaced.
  const leftover = ctx.artifacts.some((a) => a.artifactId === artifactId);
  const writer = new ReplyWriter(
    (chunk) => ctx.emitArtifact(chunk),
    artifactId,
    'reply',
    leftover,
    leftover ? { attempt: ctx.attempt, replacesEarlierAttempt: true } : undefined,
  );

  if (ctx.attempt > 1) {
    const replayed = await replayFinished(ctx);
    if (replayed !== undefined) return replayed;
  }

  const context = options.contextTasks > 0 ? await ctx.contextHistory({ maxTasks: options.contextTasks }) : [];
  const conversation = buildConversation(
    { systemPrompt: options.systemPrompt, context, history: ctx.history, input: ctx.input },
    { maxMessages: options.maxMessages, maxChars: options.maxChars },
  );
  const request: ChatRequest = { model: options.model, messages: conversation.messages };
  if (options.temperature !== undefined) request.temperature = options.temperature;
  if (options.maxTokens !== undefined) request[options.maxTokensField] = options.maxTokens;
  if (options.askUser) request.tools = [ASK_USER_TOOL];
  await ctx.recordStep('model-request', {
    model: options.model,
    messages: conversation.messages.length,
    droppedMessages: conversation.dropped,
    stream: options.stream,
  });

  const { router } = deps;
  let reply: ModelReply;
  let answeredBy: ModelEndpoint;
  // A round walks the endpoints (fallback, no wait) until one answers or none is left; then the
  // retry policy decides about another round, after its wait. A reply that streamed its first
  // token stays with its endpoint: a retry goes there again and replaces what was streamed.
  let tried = new Set<ModelEndpoint>();
  let next = router.pick(tried);
  for (let retry = 1; ; ) {
    const endpoint = (next as EndpointChoice<ModelEndpoint>).endpoint;
    const progress = { streamed: false };
    try {
      reply = await callModel(
        endpoint.client,
        { ...request, model: endpoint.model },
        { stream: options.stream, streamUsage: options.streamUsage, streamIdleTimeoutMs: options.streamIdleTimeoutMs, signal: ctx.signal, headers: { ...ctx.traceHeaders(), ...(await callerHeaders(ctx, endpoint)) }, progress },
        writer,
      );
      router.succeeded(endpoint);
      answeredBy = endpoint;
      break;
    } catch (error) {
      const fault = ctx.signal.aborted || error === writer.failure ? undefined : endpointFault(error);
      if (fault === undefined) router.released(endpoint);
      else if (router.failed(endpoint)) noteCoolDown(ctx.logger, endpoint.name, router.coolDownMs, fault);
      // Canceled, past the deadline, shutting down, or no longer the lease holder: not the model's failure.
      if (ctx.signal.aborted || error === writer.failure) throw error;
      tried.add(endpoint);
      const fallback = fault === undefined || progress.streamed ? undefined : router.pick(tried);
      if (fallback !== undefined) {
        noteFallback(ctx.logger, endpoint.name, fallback.endpoint.name, fault as EndpointFault, describeFailure(error, endpoint.keys));
        await ctx.recordStep('model-fallback', { from: endpoint.name, to: fallback.endpoint.name, reason: fault as string });
        next = fallback;
        continue;
      }
      const decision = decideRetry(error, retry, options, endpoint.keys);
      if (!decision.retry) {
        await writer.finish({ model: endpoint.model, incomplete: true });
        return failed(decision.message);
      }
      const detail: JsonObject = { retry, maxRetries: options.maxRetries, delayMs: decision.delayMs, reason: decision.reason };
      if (decision.status !== undefined) detail.status = decision.status;
      logFailure(ctx.logger, 'backend-unavailable', { cause: decision.reason, backend: endpoint.origin, model: endpoint.model, callAttempt: retry, maxRetries: options.maxRetries, retryInMs: decision.delayMs, ...(decision.status === undefined ? {} : { status: decision.status }) });
      await ctx.recordStep('model-retry', detail);
      await ctx.emitStatus(
        `The model server failed (${decision.reason}); retrying in ${formatMs(decision.delayMs)} (retry ${retry} of ${options.maxRetries}).`,
        { modelRetry: detail },
      );
      await sleep(decision.delayMs, ctx.signal);
      await writer.restart();
      retry += 1;
      tried = new Set();
      next = progress.streamed ? { endpoint, probe: false } : router.pick(tried);
    }
  }

  const model = reply.model ?? answeredBy.model;
  const metadata: JsonObject = { model, finishReason: reply.finishReason, truncated: reply.finishReason === 'length' };
  if (reply.usage === undefined) metadata.usageReported = false;
  if (options.stream) await writer.finish(metadata);
  else await writer.complete(reply.text, metadata);

  // Usage is recorded as the server reported it and charged before the turn's outcome is
  // decided: a charge past turnBudget rejects here and the runtime fails the turn.
  if (reply.usage !== undefined) {
    await ctx.recordUsage({ model, inputTokens: reply.usage.inputTokens, outputTokens: reply.usage.outputTokens });
    await ctx.budget.charge(reply.usage.totalTokens, 'tokens');
  } else {
    const sentChars = conversation.messages.reduce((n, m) => n + (typeof m.content === 'string' ? m.content.length : 0), 0);
    await ctx.budget.charge(estimateTokens(sentChars) + estimateTokens(reply.text.length), 'tokens (estimated: the server reported no usage)');
  }

  const outcome = outcomeOf(reply, options.askUser);
  await keepFinished(ctx, { turn: ctx.turn, outcome });
  return outcome;
}

/**
 * Kept after the tokens were charged: a later attempt of this turn (its worker was lost before
 * the turn was stored) ends the turn with this reply instead of buying another one.
 */
async function keepFinished(ctx: AdapterContext, finished: FinishedReply): Promise<void> {
  const value = finished as unknown as JsonValue;
  if (Buffer.byteLength(JSON.stringify(value)) > MAX_KEPT_REPLY_BYTES) return;
  await ctx.adapterState.set(FINISHED_REPLY_KEY, value);
}

/**
 * The outcome an earlier attempt of this turn reached, if it got that far. Its artifact is
 * already complete (the final chunk is stored before the reply is kept), so nothing is re-sent.
 */
async function replayFinished(ctx: AdapterContext): Promise<TurnOutcome | undefined> {
  const kept = (await ctx.adapterState.get(FINISHED_REPLY_KEY)) as unknown as FinishedReply | undefined;
  if (kept === undefined || kept === null || kept.turn !== ctx.turn) return undefined;
  await ctx.recordStep('model-reply-replayed', { turn: ctx.turn });
  return kept.outcome;
}
