// One chat-completion request, streamed into the reply writer or answered whole. It ends with
// the finished reply, or throws: the turn's abort reason when its signal fired (the HTTP request
// is aborted with it, so the server sees the client go), the writer's failure (the stream is
// stopped too), a StreamCutError when the stream ended or went silent before the model
// finished, or whatever the client threw (for the retry policy to judge).
import type OpenAI from 'openai';
import type { ChatCompletionCreateParamsBase } from 'openai/resources/chat/completions';
import type { ToolCall } from './ask-user.ts';
import type { ReplyWriter } from './reply-writer.ts';
import { StreamCutError } from './retry-policy.ts';
import { eventStreamInit } from '../bounded-response.ts';
import { GEN_AI, inClientSpan } from '../../src/telemetry/spans.ts';

export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}

export interface ModelReply {
  text: string;
  /** `stop`, `length`, `tool_calls`, `content_filter`, … as the server said it. */
  finishReason: string;
  toolCalls: ToolCall[];
  /** As the server reported it; undefined when it reported none. */
  usage: ModelUsage | undefined;
  /** The model that answered, as the server named it. */
  model: string | undefined;
}

export type ChatRequest = Omit<ChatCompletionCreateParamsBase, 'stream' | 'stream_options'>;

export interface ModelCallOptions {
  stream: boolean;
  streamUsage: boolean;
  streamIdleTimeoutMs: number;
  /** The turn's signal: CancelTask, the deadline, worker shutdown. */
  signal: AbortSignal;
  /** Extra request headers: the turn's trace context (ctx.traceHeaders()), which the call's span then replaces with its own. */
  headers?: Record<string, string>;
  /** Set once the first token went to the writer: from then on the call may not move to another endpoint. */
  progress?: { streamed: boolean };
}

interface UsageLike {
  prompt_tokens?: number | null;
  completion_tokens?: number | null;
  total_tokens?: number | null;
}

function usageOf(usage: UsageLike | null | undefined): ModelUsage | undefined {
  if (usage === null || usage === undefined) return undefined;
  const inputTokens = Math.max(0, Math.floor(usage.prompt_tokens ?? 0));
  const outputTokens = Math.max(0, Math.floor(usage.completion_tokens ?? 0));
  const total = usage.total_tokens ?? inputTokens + outputTokens;
  return { inputTokens, outputTokens, totalTokens: Math.max(0, Math.floor(total)) };
}

/** Stops the call with the turn's own reason, or the writer's failure, if either happened. */
function rethrowStop(options: ModelCallOptions, writer: ReplyWriter): void {
  if (options.signal.aborted) throw options.signal.reason as Error;
  if (writer.failure !== undefined) throw writer.failure;
}

/**
 * The call in a GenAI `chat {model}` client span (tokens, finish reason, the model that
 * answered), with the trace context sent to the model server.
 */
export function callModel(client: OpenAI, request: ChatRequest, options: ModelCallOptions, writer: ReplyWriter): Promise<ModelReply> {
  const attributes = { [GEN_AI.operationName]: 'chat', [GEN_AI.providerName]: 'openai', [GEN_AI.requestModel]: request.model, 'gen_ai.request.stream': options.stream };
  const headers: Record<string, string> = { ...options.headers };
  return inClientSpan(`chat ${request.model}`, attributes, headers, async (span) => {
    const reply = await callModelOnce(client, request, { ...options, headers }, writer);
    span?.setAttributes({
      [GEN_AI.finishReasons]: [reply.finishReason],
      ...(reply.model === undefined ? {} : { [GEN_AI.responseModel]: reply.model }),
      ...(reply.usage === undefined ? {} : { [GEN_AI.inputTokens]: reply.usage.inputTokens, [GEN_AI.outputTokens]: reply.usage.outputTokens }),
    });
    return reply;
  });
}

async function callModelOnce(client: OpenAI, request: ChatRequest, options: ModelCallOptions, writer: ReplyWriter): Promise<ModelReply> {
  if (!options.stream) return callWhole(client, request, options, writer);
  // One controller per call: the turn's signal, a failed write and a silent stream all stop it.
  const local = new AbortController();
  const signal = AbortSignal.any([options.signal, local.signal]);
  writer.onFailure = (error) => local.abort(error);
  let silent = false;
  let idle: NodeJS.Timeout | undefined;
  const watch = (): void => {
    clearTimeout(idle);
    idle = setTimeout(() => {
      silent = true;
      local.abort(new StreamCutError(`the reply stream was silent for ${options.streamIdleTimeoutMs} ms (streamIdleTimeoutMs)`));
    }, options.streamIdleTimeoutMs);
  };
  let text = '';
  let finishReason: string | undefined;
  let usage: ModelUsage | undefined;
  let model: string | undefined;
  const calls = new Map<number, ToolCall>();
  try {
    const stream = await client.chat.completions.create(
      { ...request, stream: true, ...(options.streamUsage ? { stream_options: { include_usage: true } } : {}) },
      // Read as a stream whatever the answer's Content-Type (the client parses it as one). Silence
      // is no bytes at all: every chunk the connection delivers restarts the watch, so a huge
      // delta still arriving is cut by backendLimits.maxEventBytes, not taken for a silent stream.
      { signal, headers: options.headers, fetchOptions: eventStreamInit(watch) },
    );
    watch();
    for await (const chunk of stream) {
      watch();
      model ??= chunk.model;
      usage = usageOf(chunk.usage) ?? usage;
      const choice = chunk.choices?.[0];
      if (choice === undefined) continue;
      const delta = choice.delta;
      if (typeof delta?.content === 'string' && delta.content !== '') {
        text += delta.content;
        if (options.progress !== undefined) options.progress.streamed = true;
        writer.push(delta.content);
        if (writer.backlogged) {
          // Not silence: the stream is not read meanwhile (see ReplyWriter's backpressure).
          clearTimeout(idle);
          await writer.whenWritable();
          watch();
        }
      }
      for (const call of delta?.tool_calls ?? []) {
        const entry = calls.get(call.index) ?? { name: '', arguments: '' };
        if (call.function?.name) entry.name += call.function.name;
        if (call.function?.arguments) entry.arguments += call.function.arguments;
        calls.set(call.index, entry);
      }
      if (choice.finish_reason) finishReason = choice.finish_reason;
    }
  } catch (error) {
    rethrowStop(options, writer);
    if (silent) throw local.signal.reason as Error;
    throw error;
  } finally {
    clearTimeout(idle);
    writer.onFailure = undefined;
  }
  // An aborted stream ends its iteration quietly: say why it ended.
  rethrowStop(options, writer);
  if (silent) throw local.signal.reason as Error;
  if (finishReason === undefined) throw new StreamCutError('the reply stream ended before the model finished (no finish_reason)');
  return { text, finishReason, toolCalls: [...calls.values()], usage, model };
}

async function callWhole(client: OpenAI, request: ChatRequest, options: ModelCallOptions, writer: ReplyWriter): Promise<ModelReply> {
  let completion;
  try {
    completion = await client.chat.completions.create({ ...request, stream: false }, { signal: options.signal, headers: options.headers });
  } catch (error) {
    rethrowStop(options, writer);
    throw error;
  }
  const choice = completion.choices?.[0];
  if (choice === undefined) throw new StreamCutError('the model server answered without a choice');
  const toolCalls: ToolCall[] = [];
  for (const call of choice.message.tool_calls ?? []) {
    if (call.type === 'function') toolCalls.push({ name: call.function.name, arguments: call.function.arguments ?? '' });
  }
  return {
    text: choice.message.content ?? '',
    finishReason: choice.finish_reason ?? 'stop',
    toolCalls,
    usage: usageOf(completion.usage),
    model: completion.model,
  };
}
