// One access line per gRPC call when it ends, as src/gateway/access-log.ts writes one per HTTP
// request: the method, how it ended (the status code's name), how long it took, and what the
// call was about. Never a credential: the principal is the id the credentials resolved to.
import { status as GrpcStatus, type Metadata } from '@grpc/grpc-js';
import type { Logger } from '../../logging/logger.ts';
import { traceIdOf } from '../../logging/trace-id.ts';
import { callHeaders } from './call-metadata.ts';

/** What the steps learnt about the call, filled in as they run. */
export interface CallNotes {
  agent?: string;
  principal?: string;
  tenant?: string;
  taskId?: string;
}

/** Starts a call's access line; the returned function writes it (once) with the status code the call ended with. */
export function startAccessLine(metadata: Metadata, call: { path: string; operation: string }, notes: CallNotes, logger: Logger | undefined): (code: number) => void {
  if (logger === undefined) return () => undefined;
  const startedAt = process.hrtime.bigint();
  let written = false;
  return (code) => {
    if (written) return;
    written = true;
    const traceId = traceIdOf(callHeaders(metadata).header('traceparent'));
    logger.info('request', {
      binding: 'grpc',
      path: call.path,
      operation: call.operation,
      status: GrpcStatus[code] ?? code,
      durationMs: Math.round(Number(process.hrtime.bigint() - startedAt) / 1e5) / 10,
      ...Object.fromEntries(Object.entries(notes).filter(([, value]) => value !== undefined && value !== '')),
      ...(traceId === undefined ? {} : { traceId }),
    });
  };
}

/** The task a request names (id, taskId or message.taskId), for the access line. */
export function taskIdOf(params: Record<string, unknown>): string | undefined {
  const named = params.id ?? params.taskId ?? (params.message as { taskId?: unknown } | undefined)?.taskId;
  return typeof named === 'string' ? named.slice(0, 256) : undefined;
}
