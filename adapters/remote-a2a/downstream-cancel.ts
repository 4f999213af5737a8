// Canceling the downstream task when our turn is stopped for good.
import { CancelTaskRequest, Task as SdkTask } from '@a2a-js/sdk';
import type { ClientCallContext } from '@a2a-js/sdk/client';
import { abortCauseOf } from '../abort-reasons.ts';
import type { Task } from '../../src/protocol/types.ts';
import type { AdapterContext } from '../types.ts';
import type { DownstreamAgent } from './downstream-agent.ts';
import { DOWNSTREAM_STATE_KEY, type DownstreamState } from './downstream-state.ts';
import { describeDownstreamError } from './errors.ts';

/** How long a CancelTask to the downstream may take: the runtime finalizes the cancel soon after. */
const CANCEL_TIMEOUT_MS = 3_000;

/**
 * The turn was aborted. A cancel, a deadline or an interrupt ends the turn's work, so the
 * downstream task is canceled too, and noted as such: a turn that comes next (after an
 * interrupt) starts a new downstream task in the same context instead of continuing this one.
 * A worker shutdown only hands the turn over, and the next worker re-attaches to the
 * downstream task, which must still be running then.
 */
export async function stopDownstream(ctx: AdapterContext, downstream: DownstreamAgent, taskId: string | undefined, contextId: string | null, callContext?: ClientCallContext): Promise<void> {
  const cause = abortCauseOf(ctx.signal);
  if (cause === 'shutdown' || cause === undefined) return;
  if (taskId === undefined) {
    await ctx.recordStep('downstream-cancel', { result: `not sent: the turn ended (${cause}) before the downstream task id was known` }).catch(() => undefined);
    return;
  }
  let result: string;
  try {
    const { client } = await downstream.connection();
    const task = await client.cancelTask(CancelTaskRequest.fromJSON({ id: taskId }), { signal: AbortSignal.timeout(CANCEL_TIMEOUT_MS), ...(callContext === undefined ? {} : { context: callContext }) });
    result = `downstream task is ${(SdkTask.toJSON(task) as Task).status.state}`;
  } catch (error) {
    result = `not canceled: ${describeDownstreamError(error)}`;
  }
  await ctx.recordStep('downstream-cancel', { taskId, reason: cause, result }).catch(() => undefined);
  const stopped: DownstreamState = { turn: ctx.turn, taskId, contextId, state: 'TASK_STATE_CANCELED', status: null };
  await ctx.adapterState.set(DOWNSTREAM_STATE_KEY, stopped).catch(() => undefined);
}
