// Where a send lost with its worker went: the downstream's own tasks are searched for the
// message (by its messageId) before it is sent again, so a turn never starts a second
// downstream task for one message.
import { GetTaskRequest, ListTasksRequest, type Task as SdkTask } from '@a2a-js/sdk';
import type { ClientCallContext } from '@a2a-js/sdk/client';
import type { JsonObject, Message } from '../../src/protocol/types.ts';
import type { AdapterContext } from '../types.ts';
import type { DownstreamAgent } from './downstream-agent.ts';
import { describeDownstreamError, endsTheTurn } from './errors.ts';

/** How far before a lost send's start the downstream's tasks are searched for it (clocks differ). */
const LOCATE_CLOCK_SLACK_MS = 60_000;
/** Pages of the downstream's recent tasks searched for a lost send before it is sent again. */
const LOCATE_MAX_PAGES = 10;

/** What the send step journals: the downstream task it created or continued, or the direct reply. */
export type Sent = { kind: 'task'; taskId: string; contextId: string | null } | { kind: 'message'; message: JsonObject };

export interface LostSendDeps {
  ctx: AdapterContext;
  downstream: DownstreamAgent;
  callOptions: { signal: AbortSignal; serviceParameters: Record<string, string>; context?: ClientCallContext };
  signal: AbortSignal;
  /** Retries a call while the downstream is unreachable (DownstreamReachability.retrying). */
  retrying: <T>(call: () => Promise<T>) => Promise<T>;
}

export class LostSendSearch {
  constructor(private readonly deps: LostSendDeps) {}

  /**
   * The journalled look for a lost send (`locate-<n>`): what it found, or null when the message
   * is not downstream. A look lost with its worker before it wrote down what it saw is unknown
   * like any step, and says nothing about the send: taking it for "not found" would send again a
   * message the look may well have found, a second downstream task for one turn. A look
   * changes nothing downstream, so it is simply made again, under a name of its own
   * (`locate-<n>-2`, …); every earlier attempt leaves at most one such unknown, so this ends.
   */
  async lookFor(n: number, messageId: string, message: Omit<Message, 'messageId'>, sinceMs: number): Promise<Sent | null> {
    for (let look = 1; ; look++) {
      const name = look === 1 ? `locate-${n}` : `locate-${n}-${look}`;
      const located = await this.deps.ctx.step<Sent | null>(name, () => this.locate(messageId, message, sinceMs));
      if (located.status === 'done') return located.value;
    }
  }

  /**
   * The downstream task a lost send created or continued, found by the message's id in its
   * history: the task the message continued (GetTask), else the tasks updated since the send
   * started (ListTasks, a few pages). Null when it is not there, or when the downstream cannot
   * say (a 0.3 agent has no ListTasks): then the message is sent again. A downstream that cannot
   * be reached right now has not said anything: the look waits for it, with backoff, like every
   * other call (a send would wait for it too, and then might be its second copy).
   */
  async locate(messageId: string, message: Omit<Message, 'messageId'>, sinceMs: number): Promise<Sent | null> {
    const holds = (task: SdkTask): boolean => task.history.some((entry) => entry.messageId === messageId);
    try {
      if (message.taskId !== undefined) {
        const continued = message.taskId;
        const task = await this.deps.retrying(async () => (await this.deps.downstream.connection()).client.getTask(GetTaskRequest.fromJSON({ id: continued }), this.deps.callOptions));
        return holds(task) ? { kind: 'task', taskId: task.id, contextId: task.contextId } : null;
      }
      // A little before the send started: the downstream's clock is not ours.
      const after = new Date(sinceMs - LOCATE_CLOCK_SLACK_MS).toISOString();
      let pageToken = '';
      for (let page = 0; page < LOCATE_MAX_PAGES; page++) {
        const request = ListTasksRequest.fromJSON({ statusTimestampAfter: after, pageSize: 100, pageToken, ...(message.contextId === undefined ? {} : { contextId: message.contextId }) });
        const listed = await this.deps.retrying(async () => (await this.deps.downstream.connection()).client.listTasks(request, this.deps.callOptions));
        const found = listed.tasks.find(holds);
        if (found !== undefined) {
          this.deps.ctx.logger.info('a lost send had reached the downstream agent; following its task instead of sending again', { downstreamTaskId: found.id });
          return { kind: 'task', taskId: found.id, contextId: found.contextId };
        }
        if (listed.nextPageToken === '') return null;
        pageToken = listed.nextPageToken;
      }
      return null;
    } catch (error) {
      if (this.deps.signal.aborted || endsTheTurn(error)) throw error;
      this.deps.ctx.logger.info('could not look for a lost send on the downstream agent; sending again with the same messageId', { error: describeDownstreamError(error) });
      return null;
    }
  }
}
