// One turn of our task, run by the downstream agent. The turn sends this turn's input to the
// downstream once, journals the downstream task id the moment it is known (a step reference),
// and mirrors what the downstream does (statuses, artifact chunks) onto our task until the
// downstream task ends or asks for something. A worker that takes the turn over after a crash
// re-attaches to that downstream task (subscribe, else poll) and never sends the message again;
// when the crash came before the id was known (or a send attempt failed after its request may
// have arrived) it looks for the message among the downstream's tasks, and only sends again
// (with the same messageId) when the downstream does not have it.
import { GetTaskRequest, Message as SdkMessage, SendMessageRequest, StreamResponse, SubscribeToTaskRequest, Task as SdkTask, type StreamResponse as SdkStreamResponse } from '@a2a-js/sdk';
import type { Client, ClientCallContext } from '@a2a-js/sdk/client';
import type { AdapterContext, StepHandle, StepOutcome, TurnOutcome } from '../types.ts';
import type { JsonObject, Message, Part, StreamResponse as WireEvent, Task, TaskStatus } from '../../src/protocol/types.ts';
import type { DownstreamAgent, DownstreamConnection } from './downstream-agent.ts';
import { continues, DOWNSTREAM_STATE_KEY, markOf, sameStatus, type DownstreamState, type StatusMark } from './downstream-state.ts';
import { describeDownstreamError, endsTheTurn, isRetryable, refused } from './errors.ts';
import { stopDownstream } from './downstream-cancel.ts';
import { LostSendSearch, type Sent } from './lost-send.ts';
import { DownstreamReachability } from './reachability.ts';
import { ArtifactMirror, outcomeOfStatus, partsOf, textOf } from './event-mapping.ts';
import type { RemoteA2aOptions } from './options.ts';
import { downstreamMessageId } from './message-id.ts';
import { PollBackoff, sleep } from './retry.ts';
import { drain } from './stream-drain.ts';

/** How the downstream task left our turn. */
type Ended = { outcome: TurnOutcome; status: TaskStatus };

/** A downstream whose resubscribe keeps failing (not merely unreachable) is polled instead. */
const MAX_STREAM_FAILURES = 3;

const toWire = (event: SdkStreamResponse): WireEvent => StreamResponse.toJSON(event) as WireEvent;

/** Closes what a finished turn left open (one shared reason: an abort reason per turn costs a stack trace). */
const TURN_ENDED = new DOMException('The turn ended', 'AbortError');

export interface RemoteTurnDeps {
  downstream: DownstreamAgent;
  options: RemoteA2aOptions;
  /** Carries the turn's caller token signer to the SDK calls (caller-token.ts); undefined when the backend gets none. */
  callContext?: ClientCallContext | undefined;
}

export class RemoteTurn {
  private readonly ctx: AdapterContext;
  private readonly deps: RemoteTurnDeps;
  /** Aborts this turn's open downstream streams when it ends, whatever the reason. */
  private readonly local = new AbortController();
  private readonly signal: AbortSignal;
  /** Every downstream call's options: the turn's signal, and its trace context as headers (the call's span continues it). */
  private readonly callOptions: { signal: AbortSignal; serviceParameters: Record<string, string>; context?: ClientCallContext };
  private taskId: string | undefined;
  private contextId: string | null = null;
  /** A fresh send's open stream and the event that carried the task id. */
  private live: AsyncGenerator<SdkStreamResponse, void, undefined> | undefined;
  private firstEvent: WireEvent | undefined;
  private readonly mirror: ArtifactMirror;
  /** The downstream status message last seen (live or in a snapshot); undefined before the first. */
  private lastStatusId: string | undefined | null = null;
  private readonly link: DownstreamReachability;
  private readonly lostSends: LostSendSearch;
  /** The downstream question this turn answers, as the downstream showed it (see run()). */
  private answering: StatusMark | null = null;

  constructor(ctx: AdapterContext, deps: RemoteTurnDeps) {
    this.ctx = ctx;
    this.deps = deps;
    this.signal = AbortSignal.any([ctx.signal, this.local.signal]);
    this.callOptions = { signal: this.signal, serviceParameters: ctx.traceHeaders(), ...(deps.callContext === undefined ? {} : { context: deps.callContext }) };
    this.mirror = new ArtifactMirror(ctx.artifacts);
    this.link = new DownstreamReachability(ctx, deps.options, this.signal, () => this.taskId);
    this.lostSends = new LostSendSearch({ ctx, downstream: deps.downstream, callOptions: this.callOptions, signal: this.signal, retrying: (call) => this.link.retrying(call) });
  }

  private retrying<T>(call: () => Promise<T>): Promise<T> {
    return this.link.retrying(call);
  }

  async run(): Promise<TurnOutcome> {
    const { ctx } = this;
    try {
      // Written when a turn ends: the first turn has nothing to read (and saves the round trip).
      const stored = ctx.turn === 1 ? undefined : await ctx.adapterState.get<DownstreamState>(DOWNSTREAM_STATE_KEY);
      // Only an earlier turn's state says which downstream task or context to continue.
      const previous = stored !== undefined && stored !== null && stored.turn < ctx.turn ? stored : undefined;
      this.contextId = previous?.contextId ?? stored?.contextId ?? null;
      // The question this turn answers: the downstream shows it until it takes the answer up (the
      // SDK starts every stream with the task as it was), so a snapshot still showing it is not a new one.
      this.answering = continues(previous) ? (previous?.status ?? null) : null;
      const sent = await this.send(previous);
      if (sent.kind === 'message') return await this.directReply(sent.message as unknown as Message);
      this.taskId = sent.taskId;
      this.contextId = sent.contextId ?? this.contextId;
      const ended = await this.follow(sent.taskId);
      const final: DownstreamState = { turn: ctx.turn, taskId: sent.taskId, contextId: this.contextId, state: ended.status.state, status: markOf(ended.status) };
      await ctx.adapterState.set(DOWNSTREAM_STATE_KEY, final);
      return ended.outcome;
    } catch (error) {
      if (ctx.signal.aborted) {
        await stopDownstream(ctx, this.deps.downstream, this.taskId, this.contextId, this.deps.callContext);
        throw ctx.signal.reason as Error;
      }
      if (isRetryable(error)) throw error;
      throw new Error(describeDownstreamError(error), { cause: error });
    } finally {
      this.local.abort(TURN_ENDED);
      await this.live?.return(undefined).catch(() => undefined);
    }
  }

  /** The input of this turn as one downstream message (without its messageId). */
  private outgoing(previous: DownstreamState | undefined): Omit<Message, 'messageId'> {
    const { input } = this.ctx;
    const message: Omit<Message, 'messageId'> = { role: 'ROLE_USER', parts: input.flatMap((m) => m.parts) };
    const metadata = input[0]?.metadata;
    if (metadata !== undefined) message.metadata = metadata;
    const extensions = [...new Set(input.flatMap((m) => m.extensions ?? []))];
    if (extensions.length > 0) message.extensions = extensions;
    if (previous?.contextId) message.contextId = previous.contextId;
    // An answer continues the downstream task that asked; anything else starts a new one in the same context.
    if (continues(previous) && previous?.taskId) message.taskId = previous.taskId;
    return message;
  }

  /**
   * Sends the input once per turn, through the step journal. A step that an earlier attempt left
   * unknown with a reference re-attaches. One left unknown without a reference (the worker died
   * before the downstream answered) may still have reached the downstream: the downstream's own
   * tasks are searched for the message (by its messageId) first, and only when it is not there is
   * it sent again under a new step name, with the same messageId, so an idempotent downstream
   * still recognises it.
   */
  private async send(previous: DownstreamState | undefined): Promise<Sent> {
    const message = this.outgoing(previous);
    let outcome: StepOutcome<Sent> = await this.ctx.step<Sent>('send', (handle) => this.sendOnce({ ...message, messageId: downstreamMessageId(handle.idempotencyKey) }, handle));
    const originalKey = outcome.status === 'unknown' ? outcome.idempotencyKey : undefined;
    for (let n = 2; outcome.status === 'unknown' && outcome.reference === undefined; n++) {
      const messageId = downstreamMessageId(originalKey as string);
      const since = Date.parse(outcome.startedAt);
      const located = await this.lostSends.lookFor(n, messageId, message, since);
      if (located !== null) return located;
      outcome = await this.ctx.step<Sent>(`send-${n}`, (handle) => this.sendOnce({ ...message, messageId }, handle));
    }
    if (outcome.status === 'unknown') return { kind: 'task', taskId: outcome.reference as string, contextId: null };
    return outcome.value;
  }

  /**
   * One send step: the message, retried while the downstream is unreachable. An attempt that
   * failed after its request may have reached the downstream (a reset, a timed-out answer, a
   * 5xx from a proxy whose upstream took it) leaves the message possibly there: the SDK server
   * does not de-duplicate by messageId, so the next attempt looks for it first (as after a
   * crash) and follows the task holding it instead of starting a second one.
   */
  private sendOnce(message: Message, handle: StepHandle): Promise<Sent> {
    const startedAtMs = Date.now();
    let mayHaveArrived = false;
    return this.retrying(async () => {
      if (mayHaveArrived) {
        const located = await this.lostSends.locate(message.messageId, message, startedAtMs);
        if (located !== null) {
          if (located.kind === 'task') {
            this.taskId = located.taskId;
            await handle.recordReference(located.taskId);
          }
          return located;
        }
      }
      const connection = await this.deps.downstream.connection();
      try {
        return await this.sendAttempt(message, handle, connection);
      } catch (error) {
        // Stays set once set: a later refused attempt does not undo an earlier delivery.
        if (!refused(error)) mayHaveArrived = true;
        throw error;
      }
    });
  }

  private async sendAttempt(message: Message, handle: StepHandle, connection: DownstreamConnection): Promise<Sent> {
    const { client } = connection;
    let first: WireEvent;
    if (connection.streaming) {
      const request = SendMessageRequest.fromJSON({ message });
      const stream = client.sendMessageStream(request, this.callOptions);
      let next: IteratorResult<SdkStreamResponse, void>;
      try {
        next = await stream.next();
      } catch (error) {
        await stream.return(undefined).catch(() => undefined);
        throw error;
      }
      if (next.done === true) throw new Error('the downstream agent closed the stream without answering');
      first = toWire(next.value);
      if ('message' in first) await stream.return(undefined).catch(() => undefined);
      else this.live = stream;
    } else {
      // Not streamed: returnImmediately, so the task id is known (and journalled) at once; then it is polled.
      const result = await client.sendMessage(SendMessageRequest.fromJSON({ message, configuration: { returnImmediately: true } }), this.callOptions);
      first = 'status' in result ? { task: SdkTask.toJSON(result) as Task } : { message: SdkMessage.toJSON(result) as Message };
    }
    this.link.reachable();
    if ('message' in first) return { kind: 'message', message: first.message as unknown as JsonObject };
    const taskId = 'task' in first ? first.task.id : 'statusUpdate' in first ? first.statusUpdate.taskId : first.artifactUpdate.taskId;
    const contextId = 'task' in first ? first.task.contextId : 'statusUpdate' in first ? first.statusUpdate.contextId : first.artifactUpdate.contextId;
    this.taskId = taskId;
    this.firstEvent = first;
    // Journalled before anything else happens: from here on a crash re-attaches instead of re-sending.
    await handle.recordReference(taskId);
    return { kind: 'task', taskId, contextId };
  }

  /**
   * Spec 3.1.1: the downstream answered with a Message, no task. So does our turn: a direct
   * Message to our client (or, where our client already holds the task, its final message).
   */
  private async directReply(message: Message): Promise<TurnOutcome> {
    const parts = partsOf(message.parts);
    const content: Part[] = parts.length > 0 ? parts : [{ text: '' }];
    await this.ctx.adapterState.set(DOWNSTREAM_STATE_KEY, { turn: this.ctx.turn, taskId: null, contextId: message.contextId ?? this.contextId, state: null, status: null });
    return { state: 'message', message: content };
  }

  /**
   * Mirrors the downstream task until it ends or asks: its live stream when there is one, else
   * (or once the stream breaks) a GetTask snapshot, then a resubscribe or the next poll.
   */
  private async follow(taskId: string): Promise<Ended> {
    const backoff = new PollBackoff({ initialDelayMs: this.deps.options.pollInitialDelayMs, maxDelayMs: this.deps.options.pollMaxDelayMs });
    let stream = this.live;
    this.live = undefined;
    let streamFailures = 0;
    if (this.firstEvent !== undefined) {
      const ended = await this.apply(this.firstEvent, taskId);
      this.firstEvent = undefined;
      if (ended !== undefined) return ended;
    }
    for (;;) {
      if (stream !== undefined) {
        try {
          for (;;) {
            const next = await stream.next();
            if (next.done === true) break;
            const ended = await this.apply(toWire(next.value), taskId);
            if (ended !== undefined) {
              await drain(stream, () => this.local.abort(TURN_ENDED));
              return ended;
            }
          }
        } catch (error) {
          if (this.ctx.signal.aborted || endsTheTurn(error)) throw error;
          if (isRetryable(error)) this.link.noticeUnreachable(error as Error, undefined);
          else streamFailures += 1;
        } finally {
          await stream.return(undefined).catch(() => undefined);
        }
        stream = undefined;
      }
      const snapshot = await this.retrying(async () => {
        const { client } = await this.deps.downstream.connection();
        return SdkTask.toJSON(await client.getTask(GetTaskRequest.fromJSON({ id: taskId, historyLength: 0 }), this.callOptions)) as Task;
      });
      const changedBefore = this.changes;
      const ended = await this.apply({ task: snapshot }, taskId);
      if (ended !== undefined) return ended;
      await sleep(backoff.next(this.changes !== changedBefore), undefined, this.callOptions);
      const connection = await this.connectionOrUndefined();
      if (connection?.streaming === true && streamFailures < MAX_STREAM_FAILURES) stream = this.resubscribe(connection.client, taskId);
    }
  }

  private async connectionOrUndefined(): Promise<DownstreamConnection | undefined> {
    try {
      return await this.deps.downstream.connection();
    } catch {
      return undefined;
    }
  }

  private resubscribe(client: Client, taskId: string): AsyncGenerator<SdkStreamResponse, void, undefined> {
    return client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: taskId }), this.callOptions);
  }

  /** Emissions counted, so a poll knows whether the downstream moved. */
  private changes = 0;

  /** Applies one downstream event to our task; returns how the turn ends, if it does. */
  private async apply(event: WireEvent, taskId: string): Promise<Ended | undefined> {
    const { ctx } = this;
    if ('task' in event) return this.applySnapshot(event.task, taskId);
    if ('artifactUpdate' in event) {
      const chunk = this.mirror.live(event.artifactUpdate);
      if (chunk !== undefined) {
        this.changes += 1;
        await ctx.emitArtifact(chunk);
      }
      return undefined;
    }
    if ('statusUpdate' in event) {
      const { status } = event.statusUpdate;
      this.contextId = event.statusUpdate.contextId || this.contextId;
      const outcome = outcomeOfStatus(status, taskId);
      this.lastStatusId = status.message?.messageId;
      if (outcome !== undefined) return { outcome, status };
      await this.progress(status.message);
      return undefined;
    }
    // A message inside a task's stream: the agent talking while it works.
    await this.progress(event.message);
    return undefined;
  }

  /**
   * A snapshot (the first event of a stream or resubscribe, or a poll): the artifacts our task is
   * missing are emitted, and the status message if it is new since the last one seen. The first
   * snapshot of a re-attaching worker only sets that baseline: the worker before it may already
   * have announced that status, and a repeated progress line is worse than a skipped one.
   */
  private async applySnapshot(task: Task, taskId: string): Promise<Ended | undefined> {
    this.contextId = task.contextId || this.contextId;
    // Still the question this turn answers: the downstream has not taken the answer up yet.
    const stale = sameStatus(task.status, this.answering);
    const outcome = stale ? undefined : outcomeOfStatus(task.status, taskId);
    const finished = outcome !== undefined;
    for (const artifact of task.artifacts ?? []) {
      const chunk = this.mirror.catchUp(artifact, finished);
      if (chunk !== undefined) {
        this.changes += 1;
        await this.ctx.emitArtifact(chunk);
      }
    }
    if (outcome !== undefined) return { outcome, status: task.status };
    if (stale) return undefined;
    const statusId = task.status.message?.messageId;
    const seenBefore = this.lastStatusId !== null;
    if (statusId !== this.lastStatusId) {
      this.lastStatusId = statusId;
      if (seenBefore) await this.progress(task.status.message);
    }
    return undefined;
  }

  private async progress(message: Message | undefined): Promise<void> {
    const text = textOf(message);
    if (text === '') return;
    this.changes += 1;
    const metadata = message?.metadata;
    await this.ctx.emitStatus(text, metadata !== undefined && typeof metadata === 'object' && !Array.isArray(metadata) ? (metadata as JsonObject) : undefined);
  }
}
