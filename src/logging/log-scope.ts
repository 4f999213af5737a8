// Fields every log line written inside a unit of work carries (the task and context a turn or
// a delivery is about), without passing them to each call: the logger's mixin reads them from
// here, beside the active span's trace and span ids.
import { AsyncLocalStorage } from 'node:async_hooks';

export interface LogScope {
  taskId?: string;
  contextId?: string;
}

const scopes = new AsyncLocalStorage<LogScope>();

/** Runs `work` with `fields` on every log line it writes (nested scopes add to the outer one). */
export function withLogScope<T>(fields: LogScope, work: () => T): T {
  const outer = scopes.getStore();
  return scopes.run(outer === undefined ? fields : { ...outer, ...fields }, work);
}

export const currentLogScope = (): LogScope | undefined => scopes.getStore();
