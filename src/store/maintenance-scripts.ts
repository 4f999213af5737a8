// The scripts of the owner's index and of maintenance (owner-index.ts, maintenance-operations.ts),
// described for callScript: keys and arguments by name in their Lua's order, replies decoded.
import type { TaskState } from '../protocol/types.ts';
import { arg, defineScript, type ArgValue } from './script-call.ts';
import { str } from './script-reply.ts';

/** A task's new score in the owner's indexes; `contextKey`: which KEYS (1-based) holds its context index. */
export interface OwnerIndexEntry {
  taskId: string;
  atMs: number;
  contextKey: number;
}

/** An active-set entry to drop while its score is at most `maxScore` (ms). */
export interface ActiveDrop {
  taskId: string;
  maxScore: number;
}

export const ownerIndexScript = defineScript({
  name: 'ownerIndex',
  keys: ['ownerTasks', 'ownerActiveTasks'],
  moreKeys: 'contextTasks',
  args: {
    entries: (entries: readonly OwnerIndexEntry[]): ArgValue[] => [entries.length, ...entries.flatMap((entry) => [entry.taskId, entry.atMs, entry.contextKey])],
    drops: (drops: readonly ActiveDrop[]): ArgValue[] => drops.flatMap((drop) => [drop.taskId, drop.maxScore]),
  },
  reply: (reply): { indexed: number; dropped: number } => ({ indexed: Number(reply[0]), dropped: Number(reply[1]) }),
});

export type EntryVerdict =
  | { outcome: 'GONE' | 'RUNNING' | 'PARKED' | 'RECENT' }
  | { outcome: 'CLOSED'; state: TaskState; updatedAtMs: number }
  | { outcome: 'WAKE'; turn: number; ownerKey: string; contextId: string }
  | { outcome: 'CANDIDATE'; turn: number; ownerKey: string; contextId: string; parentTaskId: string | undefined };

export const reconcileEntryScript = defineScript({
  name: 'reconcileEntry',
  keys: ['task', 'lease'],
  args: { nowMs: arg.int, quietForMs: arg.int, parkedQuietForMs: arg.int, withoutJobQuietForMs: arg.int },
  reply: (reply): EntryVerdict => {
    switch (reply[0]) {
      case 'GONE':
      case 'RUNNING':
      case 'PARKED':
      case 'RECENT':
        return { outcome: reply[0] };
      case 'CLOSED':
        return { outcome: 'CLOSED', state: str(reply[1]) as TaskState, updatedAtMs: Number(reply[2] ?? 0) };
      case 'WAKE':
        return { outcome: 'WAKE', turn: Number(reply[1]), ownerKey: str(reply[2]), contextId: str(reply[3]) };
      default:
        return { outcome: 'CANDIDATE', turn: Number(reply[1]), ownerKey: str(reply[2]), contextId: str(reply[3]), parentTaskId: str(reply[4]) || undefined };
    }
  },
});

export const releaseLockScript = defineScript({
  name: 'releaseLock',
  keys: ['lock'],
  args: { token: arg.text },
  reply: (reply): boolean => reply[0] === 'RELEASED',
});
