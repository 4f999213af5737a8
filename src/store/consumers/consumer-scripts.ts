// The consumers' scripts (lua/), described for callScript: keys and arguments by name in their
// Lua's order, replies decoded. Each touches one consumer's slot (consumer-keys.ts).
import { arg, defineScript } from '../script-call.ts';
import { str } from '../script-reply.ts';

export const consumerRequestScript = defineScript({
  name: 'consumerRequest',
  keys: ['rate', 'day', 'month'],
  args: { perSecond: arg.int, burst: arg.int, dayTtl: arg.int, monthTtl: arg.int },
  reply: (reply): { taken: true } | { taken: false; waitMs: number } => (Number(reply[0]) === 1 ? { taken: true } : { taken: false, waitMs: Number(reply[1]) }),
});

export type TaskStart = { ok: true } | { ok: false; limit: 'concurrentTasks' | 'tasksPerDay'; count: number };

export const consumerTaskStartScript = defineScript({
  name: 'consumerTaskStart',
  keys: ['active', 'day', 'month'],
  args: { taskId: arg.text, nowMs: arg.int, concurrent: arg.int, perDay: arg.int, dayTtl: arg.int, monthTtl: arg.int },
  reply: (reply): TaskStart => {
    const verdict = str(reply[0]);
    if (verdict === 'OK') return { ok: true };
    return { ok: false, limit: verdict === 'ACTIVE' ? 'concurrentTasks' : 'tasksPerDay', count: Number(reply[1]) };
  },
});

export const consumerTaskUndoScript = defineScript({
  name: 'consumerTaskUndo',
  keys: ['active', 'day', 'month'],
  args: { taskId: arg.text },
  reply: (): void => undefined,
});

export const consumerChargeScript = defineScript({
  name: 'consumerCharge',
  keys: ['day', 'month'],
  args: { tokensIn: arg.int, tokensOut: arg.int, spend: (value: number) => value.toFixed(9), dayTtl: arg.int, monthTtl: arg.int },
  reply: (reply): { tokensToday: number; spendThisMonth: number } => ({ tokensToday: Number(reply[0]), spendThisMonth: Number(str(reply[1]) || '0') }),
});
