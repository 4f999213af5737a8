// A2A messages as chat-completion messages: the system prompt, then the context's earlier tasks,
// then this task's history, then this turn's input. Text parts go as text, data parts as JSON
// text, files are described (never inlined); notices this adapter wrote for people (a reply cut
// short, a failure) are not sent back to the model.
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { JsonObject, Message, Part, Role } from '../../src/protocol/types.ts';

/** Part metadata that marks a part written for people, not the model (see noticePart). */
const NOTICE_KEY = 'a2aGateway';

/** A text part for people (why a reply was cut, why a turn failed); the model never sees it. */
export function noticePart(text: string, notice: string): Part {
  return { text, metadata: { [NOTICE_KEY]: { notice } } };
}

function isNotice(part: Part): boolean {
  const mark = part.metadata?.[NOTICE_KEY];
  return typeof mark === 'object' && mark !== null && !Array.isArray(mark) && typeof (mark as JsonObject)['notice'] === 'string';
}

/** Decoded size of base64 content, without decoding it. */
function base64Bytes(raw: string): number {
  const padding = raw.endsWith('==') ? 2 : raw.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((raw.length * 3) / 4) - padding);
}

function describeFile(part: Part, where: string): string {
  const name = part.filename === undefined ? 'a file' : `the file "${part.filename}"`;
  const type = part.mediaType === undefined ? '' : ` (${part.mediaType})`;
  return `[${name}${type} ${where}]`;
}

/** One part as text for the model, or undefined when it has nothing to say to it. */
export function partText(part: Part): string | undefined {
  if (isNotice(part)) return undefined;
  if (typeof part.text === 'string') return part.text;
  if (part.data !== undefined) return JSON.stringify(part.data);
  if (typeof part.url === 'string') return describeFile(part, `at ${part.url}`);
  if (typeof part.raw === 'string') return describeFile(part, `of ${base64Bytes(part.raw)} bytes, attached but not included`);
  return undefined;
}

/** A message's parts as one text (parts on their own lines); '' when nothing is for the model. */
export function messageText(message: Message): string {
  return message.parts
    .map(partText)
    .filter((t): t is string => t !== undefined && t !== '')
    .join('\n');
}

export function chatRole(role: Role): 'user' | 'assistant' {
  return role === 'ROLE_AGENT' ? 'assistant' : 'user';
}

export interface ConversationInput {
  systemPrompt: string | undefined;
  /** Messages of the context's earlier tasks, oldest first. */
  context: readonly Message[];
  /** This task's messages before this turn, oldest first. */
  history: readonly Message[];
  /** This turn's input (always sent, whatever the bounds). */
  input: readonly Message[];
}

export interface ConversationBounds {
  /** Most messages besides the system prompt. */
  maxMessages: number;
  /** Most characters of message text besides the system prompt. */
  maxChars: number;
}

export interface Conversation {
  messages: ChatCompletionMessageParam[];
  /** Earlier messages left out to stay within the bounds (oldest first). */
  dropped: number;
}

interface Turn {
  role: 'user' | 'assistant';
  content: string;
}

function turnsOf(messages: readonly Message[]): Turn[] {
  const turns: Turn[] = [];
  for (const message of messages) {
    const content = messageText(message);
    if (content !== '') turns.push({ role: chatRole(message.role), content });
  }
  return turns;
}

/**
 * Consecutive messages of one role become one message: several queued follow-ups, or a context
 * whose agent reply is missing, would otherwise break chat templates that insist on alternating
 * roles (several models served by vLLM refuse such a conversation).
 */
function mergeRuns(turns: Turn[]): Turn[] {
  const merged: Turn[] = [];
  for (const turn of turns) {
    const last = merged[merged.length - 1];
    if (last !== undefined && last.role === turn.role) last.content = `${last.content}\n\n${turn.content}`;
    else merged.push({ ...turn });
  }
  return merged;
}

/**
 * The request's messages. The input is always sent; earlier messages (context, then history)
 * are dropped oldest first until at most `maxMessages` messages and `maxChars` characters
 * remain, and an assistant message left at the start (its question dropped) goes too.
 */
export function buildConversation(input: ConversationInput, bounds: ConversationBounds): Conversation {
  const current = turnsOf(input.input);
  const earlier = turnsOf([...input.context, ...input.history]);
  let messages = current.length;
  let chars = current.reduce((n, t) => n + t.content.length, 0);
  // Walk back from the newest earlier message, keeping what still fits.
  let start = earlier.length;
  while (start > 0) {
    const candidate = earlier[start - 1] as Turn;
    if (messages + 1 > bounds.maxMessages || chars + candidate.content.length > bounds.maxChars) break;
    messages += 1;
    chars += candidate.content.length;
    start -= 1;
  }
  while (start < earlier.length && earlier[start]?.role === 'assistant') start += 1;
  const kept = mergeRuns([...earlier.slice(start), ...current]);
  const result: ChatCompletionMessageParam[] = [];
  if (input.systemPrompt !== undefined && input.systemPrompt !== '') result.push({ role: 'system', content: input.systemPrompt });
  for (const turn of kept) result.push({ role: turn.role, content: turn.content });
  return { messages: result, dropped: start };
}
