// The scripts of the worker pool's fair share (queues/running-share.ts, queues/tenant-share.ts,
// through src/store/shares/fair-share-store.ts), described for callScript: keys and arguments by
// name in their Lua's order, replies decoded.
import { arg, defineScript } from './script-call.ts';

export const runningSlotTakeScript = defineScript({
  name: 'runningSlotTake',
  keys: ['running'],
  args: { taskId: arg.text, cap: arg.int, ttlMs: arg.int },
  /** Whether the slot was taken, how many run in the set, and whether this take added the task (false: it was there). */
  reply: (reply): { taken: boolean; running: number; fresh: boolean } => ({ taken: Number(reply[0]) === 1, running: Number(reply[1]), fresh: Number(reply[2]) === 1 }),
});

export const runningSlotRenewScript = defineScript({
  name: 'runningSlotRenew',
  keys: ['running'],
  args: { ttlMs: arg.int, taskIds: arg.each },
  reply: (reply): number => Number(reply[0]),
});

export const tenantBusyOwnersScript = defineScript({
  name: 'tenantBusyOwners',
  keys: ['busyOwners'],
  args: { ownerKey: arg.text, windowMs: arg.int },
  reply: (reply): number => Number(reply[0]),
});
