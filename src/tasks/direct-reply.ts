// A direct reply (spec 3.1.1): the agent answered a new task's first turn with a Message
// instead of task updates. The gateway keeps the exchange as a completed task in Redis (the
// message is stored before it is announced, and a re-sent messageId finds the same Message),
// whose final status update carries the reply and a marker in the gateway's metadata key.
// SendMessage answers with the stored Message; a held SendStreamingMessage stream (see
// StreamPlan.holdForDirectReply) turns the marked final event into its one Message frame.
import { RESERVED_METADATA_KEY } from '../protocol/schemas.ts';
import type { JsonObject, Message, StreamResponse } from '../protocol/types.ts';

/** The final status update's metadata that marks a direct reply. */
export const DIRECT_REPLY_EVENT_METADATA: JsonObject = { [RESERVED_METADATA_KEY]: { directReply: true } };

/** The Message the client gets: the agent's final message, without the task id it never saw. */
export function asDirectReply(agentMessage: Message): Message {
  const reply: Message = { ...agentMessage };
  delete reply.taskId;
  return reply;
}

/** The direct reply a stored or published event stands for, or undefined when it is not one. */
export function directReplyOfEvent(json: string): Message | undefined {
  // Most events are not: decided without parsing them.
  if (!json.includes('"directReply":true')) return undefined;
  const event = JSON.parse(json) as StreamResponse;
  if (!('statusUpdate' in event)) return undefined;
  const { status, metadata } = event.statusUpdate;
  const marker = metadata?.[RESERVED_METADATA_KEY];
  const marked = marker !== null && typeof marker === 'object' && !Array.isArray(marker) && marker.directReply === true;
  if (!marked || status.state !== 'TASK_STATE_COMPLETED' || status.message === undefined) return undefined;
  return asDirectReply(status.message);
}
