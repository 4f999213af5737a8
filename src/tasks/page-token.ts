// ListTasks page tokens: [score, taskId] of the entry the next page starts after, and a
// filtered listing's total, opaque to the client.
import { invalidParams } from '../protocol/errors.ts';
import type { ListCursor } from '../store/task-listing.ts';

export function encodePageToken(cursor: ListCursor): string {
  const parts: (string | number)[] = [cursor.score, cursor.taskId];
  if (cursor.total !== undefined) parts.push(cursor.total);
  return Buffer.from(JSON.stringify(parts)).toString('base64url');
}

export function decodePageToken(token: string): ListCursor {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(parsed) && (parsed.length === 2 || parsed.length === 3) && /^\d+$/.test(String(parsed[0])) && typeof parsed[1] === 'string') {
      const total = parsed[2] as unknown;
      if (parsed.length === 3 && !(Number.isSafeInteger(total) && (total as number) >= 0)) throw new Error('bad total');
      return parsed.length === 3 ? { score: String(parsed[0]), taskId: parsed[1], total: total as number } : { score: String(parsed[0]), taskId: parsed[1] };
    }
  } catch {
    // fall through to the error below
  }
  throw invalidParams([{ field: 'pageToken', description: 'is not a token this gateway issued; use nextPageToken from the previous page' }]);
}
