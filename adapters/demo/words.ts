// The words of a demo turn's input: the first one may name a skill.
import type { Message } from '../../src/protocol/types.ts';

export function messageText(message: Message | undefined): string {
  if (!message) return '';
  return message.parts.map((p) => (typeof p.text === 'string' ? p.text : '')).join('');
}

/** Splits "word rest..." so skill keywords can be recognized and stripped. */
export function splitFirstWord(text: string): { first: string; rest: string } {
  const trimmed = text.trim();
  const match = /^(\S+)\s*([\s\S]*)$/.exec(trimmed);
  if (!match) return { first: '', rest: '' };
  return { first: (match[1] ?? '').toLowerCase(), rest: match[2] ?? '' };
}

/**
 * The argument text of a skill invocation. When the skill was picked by its keyword the
 * keyword is not part of the argument; when it was picked via metadata, a leading keyword is
 * still dropped so "stream a b" behaves the same either way.
 */
