// One line per request at info, written when the response is finished (for a stream: when it
// ends): what was asked, by whom, about which task, how it ended and how long it took. Never a
// credential: the principal is the id credentials resolved to, not the token. Probes log at debug.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { notesOf } from '../bindings/http/request-notes.ts';
import type { Logger } from '../logging/logger.ts';
import { traceIdOf } from '../logging/trace-id.ts';

const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

export function logAccess(request: IncomingMessage, response: ServerResponse, path: string, agent: string | undefined, logger: Logger): void {
  const startedAt = process.hrtime.bigint();
  response.once('close', () => {
    const notes = notesOf(response);
    const fields: Record<string, unknown> = {
      method: request.method,
      path,
      status: response.statusCode,
      durationMs: Math.round(Number(process.hrtime.bigint() - startedAt) / 1e5) / 10,
    };
    if (!response.writableFinished) fields.clientGone = true;
    if (agent !== undefined) fields.agent = agent;
    if (notes.operation !== undefined) fields.operation = notes.operation;
    if (notes.taskId !== undefined) fields.taskId = notes.taskId;
    if (notes.principal !== undefined) fields.principal = notes.principal;
    if (notes.tenant !== undefined && notes.tenant !== '') fields.tenant = notes.tenant;
    const traceId = traceIdOf(request.headers.traceparent);
    if (traceId !== undefined) fields.traceId = traceId;
    if (PROBES.has(path)) logger.debug('request', fields);
    else logger.info('request', fields);
  });
}
