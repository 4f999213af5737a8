// What "the same message" means for a re-sent messageId: the same parts, sent to the same task
// and context, referring to the same tasks. Compared by a digest of the RFC 8785 canonical
// JSON of those fields as the client sent them, so key order and number spelling do not count.
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Message } from '../protocol/types.ts';

/** The fields of a message its digest covers. */
export type DigestedFields = Pick<Message, 'parts' | 'taskId' | 'contextId' | 'referenceTaskIds'>;

export function messageDigestOf(message: DigestedFields): string {
  const content = {
    parts: message.parts,
    taskId: message.taskId ?? null,
    contextId: message.contextId ?? null,
    referenceTaskIds: message.referenceTaskIds ?? [],
  };
  return createHash('sha256')
    .update(canonicalize(content) ?? '')
    .digest('base64url');
}
