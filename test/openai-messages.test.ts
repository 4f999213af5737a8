// How A2A messages become chat-completion messages (adapters/openai/chat-messages.ts).
import { describe, expect, it } from 'vitest';
import { buildConversation, chatRole, messageText, noticePart, partText } from '../adapters/openai/chat-messages.ts';
import type { Message, Part } from '../src/protocol/types.ts';

let counter = 0;
function msg(role: 'ROLE_USER' | 'ROLE_AGENT', ...parts: (string | Part)[]): Message {
  counter += 1;
  return { messageId: `m${counter}`, role, parts: parts.map((p) => (typeof p === 'string' ? { text: p } : p)) };
}
const user = (...parts: (string | Part)[]): Message => msg('ROLE_USER', ...parts);
const agent = (...parts: (string | Part)[]): Message => msg('ROLE_AGENT', ...parts);
const wide = { maxMessages: 100, maxChars: 100_000 };

describe('parts as text', () => {
  it('text as is, data as JSON text, files described and never inlined, notices left out', () => {
    expect(partText({ text: 'hello' })).toBe('hello');
    expect(partText({ data: { amount: 5, currency: 'EUR' } })).toBe('{"amount":5,"currency":"EUR"}');
    expect(partText({ url: 'https://files.example/report.pdf', filename: 'report.pdf', mediaType: 'application/pdf' })).toBe(
      '[the file "report.pdf" (application/pdf) at https://files.example/report.pdf]',
    );
    expect(partText({ raw: Buffer.from('0123456789').toString('base64'), mediaType: 'text/plain' })).toBe('[a file (text/plain) of 10 bytes, attached but not included]');
    expect(partText(noticePart('The reply was cut off.', 'truncated'))).toBeUndefined();
  });

  it('a message is its parts on their own lines; empty and notice parts add nothing', () => {
    expect(messageText(user('look at this', { data: [1, 2] }, { text: '' }, noticePart('x', 'error')))).toBe('look at this\n[1,2]');
  });

  it('ROLE_USER is user, ROLE_AGENT is assistant', () => {
    expect(chatRole('ROLE_USER')).toBe('user');
    expect(chatRole('ROLE_AGENT')).toBe('assistant');
  });
});

describe('the conversation sent', () => {
  it('system prompt, then the context, then the history, then the input, in that order', () => {
    const conversation = buildConversation(
      {
        systemPrompt: 'Be brief.',
        context: [user('c1'), agent('a1')],
        history: [user('h1'), agent('q1?')],
        input: [user('answer')],
      },
      wide,
    );
    expect(conversation.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'c1' },
      { role: 'assistant', content: 'a1' },
      { role: 'user', content: 'h1' },
      { role: 'assistant', content: 'q1?' },
      { role: 'user', content: 'answer' },
    ]);
    expect(conversation.dropped).toBe(0);
  });

  it('no system message without a system prompt; consecutive messages of one role are merged', () => {
    const conversation = buildConversation({ systemPrompt: undefined, context: [], history: [], input: [user('one'), user('two')] }, wide);
    expect(conversation.messages).toEqual([{ role: 'user', content: 'one\n\ntwo' }]);
  });

  it('messages with nothing for the model (only notices) are left out', () => {
    const conversation = buildConversation(
      { systemPrompt: undefined, context: [user('q'), agent(noticePart('The model server refused the request.', 'error'))], history: [], input: [user('again')] },
      wide,
    );
    expect(conversation.messages).toEqual([{ role: 'user', content: 'q\n\nagain' }]);
  });

  it('maxMessages drops the oldest earlier messages first, never the input', () => {
    const conversation = buildConversation(
      { systemPrompt: 'S', context: [user('c1'), agent('a1')], history: [user('h1'), agent('q1')], input: [user('i1')] },
      { maxMessages: 3, maxChars: 100_000 },
    );
    expect(conversation.messages).toEqual([
      { role: 'system', content: 'S' },
      { role: 'user', content: 'h1' },
      { role: 'assistant', content: 'q1' },
      { role: 'user', content: 'i1' },
    ]);
    expect(conversation.dropped).toBe(2);
  });

  it('maxChars drops whole old messages; an assistant message left first (its question gone) goes too', () => {
    const conversation = buildConversation(
      { systemPrompt: 'a long system prompt that does not count', context: [user('x'.repeat(50)), agent('y'.repeat(10))], history: [user('z'.repeat(10))], input: [user('i'.repeat(10))] },
      { maxMessages: 100, maxChars: 35 },
    );
    expect(conversation.messages[0]?.role).toBe('system');
    expect(conversation.messages.slice(1)).toEqual([{ role: 'user', content: `${'z'.repeat(10)}\n\n${'i'.repeat(10)}` }]);
    expect(conversation.dropped).toBe(2);
  });

  it('an input larger than the bounds is still sent whole', () => {
    const big = 'b'.repeat(500);
    const conversation = buildConversation({ systemPrompt: undefined, context: [user('old')], history: [], input: [user(big)] }, { maxMessages: 1, maxChars: 10 });
    expect(conversation.messages).toEqual([{ role: 'user', content: big }]);
    expect(conversation.dropped).toBe(1);
  });
});
