// The one tool the model is offered: ask_user(question). Calling it is how a model ends a turn
// in INPUT_REQUIRED; the caller's answer is the next turn's input, sent with the whole history.
import type { ChatCompletionFunctionTool } from 'openai/resources/chat/completions';

export const ASK_USER = 'ask_user';

export const ASK_USER_TOOL: ChatCompletionFunctionTool = {
  type: 'function',
  function: {
    name: ASK_USER,
    description:
      'Ask the user a question when you cannot continue without information only they can give. ' +
      'The conversation pauses until they answer; their answer comes back as their next message.',
    parameters: {
      type: 'object',
      properties: { question: { type: 'string', description: 'The question, complete and self-contained.' } },
      required: ['question'],
      additionalProperties: false,
    },
  },
};

/** A tool call the model made, as streamed or returned (arguments are JSON text). */
export interface ToolCall {
  name: string;
  arguments: string;
}

const FALLBACK_QUESTION = 'The agent needs more information to continue. Please add details to your request.';

/**
 * The question of an ask_user call: its `question` argument; arguments that are not JSON
 * (some small models write the question bare) are taken as the question; the reply text when
 * the call carries nothing.
 */
export function questionOf(call: ToolCall, replyText: string): string {
  const raw = call.arguments.trim();
  if (raw !== '') {
    try {
      const parsed: unknown = JSON.parse(raw);
      if (typeof parsed === 'object' && parsed !== null && typeof (parsed as Record<string, unknown>)['question'] === 'string') {
        const question = ((parsed as Record<string, unknown>)['question'] as string).trim();
        if (question !== '') return question;
      } else if (typeof parsed === 'string' && parsed.trim() !== '') {
        return parsed.trim();
      }
    } catch {
      return raw;
    }
  }
  return replyText.trim() !== '' ? replyText.trim() : FALLBACK_QUESTION;
}
