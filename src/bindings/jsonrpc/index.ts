// The JSON-RPC 2.0 binding (spec 9): one POST endpoint, PascalCase methods (the operation
// registry's names), SSE for streaming methods; with A2A-Version 0.3 (or none) the registry's
// 0.3 method names, in the 0.3 wire form (src/compat/v0_3). Translates envelopes and errors; the operations
// are declared in src/operations and run by its dispatcher.
import { A2AError } from '../../protocol/errors.ts';
import { LimitExceededError } from '../../limits/limit-refusal.ts';
import type { Logger } from '../../logging/logger.ts';
import { openStream, runUnary, type OperationDeps } from '../../operations/dispatch.ts';
import { OPERATIONS } from '../../operations/registry.ts';
import type { SseStreams } from '../sse/sse-writer.ts';
import { pipeTaskStream } from '../sse/task-stream.ts';
import { shaped, toA2AError } from '../errors.ts';
import type { Exchange } from '../http/exchange.ts';
import { lastEventIdOf } from '../http/last-event-id.ts';
import { exchangeContext } from '../http/extensions.ts';
import { LEGACY_TRANSLATIONS, legacyStreamFrame, type LegacyTranslation } from '../../compat/v0_3/index.ts';
import { EXTENSIONS_HEADER, LEGACY_EXTENSIONS_HEADER } from '../../extensions/activation.ts';
import type { Operation } from '../../operations/definition.ts';
import { LEGACY_PROTOCOL_VERSION, PROTOCOL_VERSION, wrongVersionFor, type ProtocolVersion } from '../../protocol/version.ts';
import { versionOf, type AdmittedRequest, type RequestEdge } from '../http/pipeline.ts';
import { noteRequest, noteResult } from '../http/request-notes.ts';
import { withJsonNames } from '../../protocol/protojson.ts';

type JsonRpcId = string | number | null;

export interface JsonRpcBindingOptions extends OperationDeps {
  /** The per-request steps before the operation (size, type, credentials, body bounds). */
  edge: RequestEdge;
  /** This gateway's open streams (heartbeats, shutdown). */
  streams: SseStreams;
  logger: Logger;
}

const JSONRPC_MESSAGES: Partial<Record<A2AError['kind'], string>> = {
  PARSE_ERROR: 'Invalid JSON payload',
  INVALID_REQUEST: 'Request payload validation error',
  METHOD_NOT_FOUND: 'Method not found',
};

export function jsonRpcErrorBody(id: JsonRpcId, error: A2AError): Record<string, unknown> {
  const message = JSONRPC_MESSAGES[error.kind] === undefined ? error.message : `${JSONRPC_MESSAGES[error.kind]}: ${error.message}`;
  return { jsonrpc: '2.0', id, error: { code: error.mapping.jsonRpcCode, message, data: error.details() } };
}

/**
 * Longest string `id` accepted: the id is echoed in the response and in every SSE frame of a
 * stream, so its size multiplies. Longer ones are refused (-32600) and answered with id null.
 */
export const MAX_REQUEST_ID_LENGTH = 128;

function readEnvelope(body: unknown): { id: JsonRpcId; method: string; params: unknown } {
  if (Array.isArray(body)) {
    throw new A2AError('INVALID_REQUEST', 'batch requests are not supported; send one request per HTTP call');
  }
  if (body === null || typeof body !== 'object') throw new A2AError('INVALID_REQUEST', 'the request must be a JSON object');
  const envelope = body as Record<string, unknown>;
  const rawId = envelope.id;
  const tooLong = typeof rawId === 'string' && rawId.length > MAX_REQUEST_ID_LENGTH;
  const id: JsonRpcId = (typeof rawId === 'string' && !tooLong) || typeof rawId === 'number' ? rawId : null;
  const violations = [];
  if (envelope.jsonrpc !== '2.0') violations.push({ field: 'jsonrpc', description: 'must be exactly "2.0"' });
  if (!('id' in envelope)) violations.push({ field: 'id', description: 'is required: every A2A method returns a result' });
  else if (rawId !== null && typeof rawId !== 'string' && typeof rawId !== 'number') {
    violations.push({ field: 'id', description: 'must be a string, a number or null' });
  } else if (tooLong) {
    violations.push({ field: 'id', description: `is ${rawId.length} characters long; at most ${MAX_REQUEST_ID_LENGTH} are accepted` });
  }
  if (typeof envelope.method !== 'string') violations.push({ field: 'method', description: 'must be a string' });
  if (envelope.params !== undefined && (envelope.params === null || typeof envelope.params !== 'object' || Array.isArray(envelope.params))) {
    violations.push({ field: 'params', description: 'must be an object' });
  }
  if (violations.length > 0) {
    const message = violations.map((v) => `${v.field} ${v.description}`).join('; ');
    const error = tooLong ? new LimitExceededError('maxRequestIdLength', 'INVALID_REQUEST', message, { violations }) : new A2AError('INVALID_REQUEST', message, { violations });
    throw Object.assign(error, { requestId: id });
  }
  return { id, method: envelope.method as string, params: envelope.params ?? {} };
}

/**
 * The operation a method names in the request's protocol version: a 1.0 (PascalCase) method,
 * or a 0.3 one (`message/send`, …) with its translation. A method of the other version is
 * refused naming the version to send.
 */
function resolveMethod(method: string, version: ProtocolVersion, requested: Parameters<typeof wrongVersionFor>[1]): { operation: Operation; legacy: LegacyTranslation | undefined } {
  if (version === LEGACY_PROTOCOL_VERSION) {
    const operation = OPERATIONS.byLegacyJsonRpcMethod(method);
    const translation = operation === undefined ? undefined : LEGACY_TRANSLATIONS[operation.name];
    if (operation !== undefined && translation !== undefined) return { operation, legacy: translation };
    if (OPERATIONS.byName(method) !== undefined) throw wrongVersionFor(`The method ${method}`, requested, PROTOCOL_VERSION);
    const known = OPERATIONS.operations.flatMap((o) => (o.legacy === undefined ? [] : [o.legacy.jsonRpcMethod]));
    throw new A2AError('METHOD_NOT_FOUND', `"${method}" is not an A2A 0.3 method (${known.join(', ')}); send "A2A-Version: 1.0" for the 1.0 methods`, {
      metadata: { method },
    });
  }
  const operation = OPERATIONS.byName(method);
  if (operation !== undefined) return { operation, legacy: undefined };
  const extensionMethods = OPERATIONS.extensions.flatMap((extension) => extension.methods.map((m) => m.name));
  const hint = OPERATIONS.byLegacyJsonRpcMethod(method) === undefined ? '' : `; it is an A2A 0.3 method: send "A2A-Version: ${LEGACY_PROTOCOL_VERSION}" to call it`;
  throw new A2AError('METHOD_NOT_FOUND', `"${method}" is not an A2A 1.0 method (nor one of this gateway's extension methods: ${extensionMethods.join(', ')})${hint}`, {
    metadata: { method },
  });
}

/** The endpoint's one method: anything but POST is 405 (answered with id null). */
export function checkJsonRpcMethod(exchange: Exchange): void {
  if (exchange.method === 'POST') return;
  exchange.response.setHeader('Allow', 'POST');
  throw new A2AError('INVALID_REQUEST', 'the JSON-RPC endpoint only accepts POST', { httpStatus: 405 });
}

/** What the admission steps take for a JSON-RPC request: every one has a JSON body; the version is checked once the id is known. */
export const JSONRPC_ADMISSION = { content: 'json-required', readsBody: true, checkVersion: false } as const;

/** Handles one request to the JSON-RPC endpoint, admitted by the gateway's pipeline (gateway/app.ts). */
export async function handleJsonRpc(exchange: Exchange, admitted: AdmittedRequest, options: JsonRpcBindingOptions): Promise<void> {
  let id: JsonRpcId = null;
  try {
    const { principal, body: text, paidBeforeBody } = admitted;
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new A2AError('PARSE_ERROR', 'the body is not valid JSON');
    }
    let envelope;
    try {
      envelope = readEnvelope(body);
    } catch (error) {
      id = (error as { requestId?: JsonRpcId }).requestId ?? null;
      throw error;
    }
    id = envelope.id;
    const version = versionOf(exchange);
    const resolved = resolveMethod(envelope.method, version, { header: exchange.header('a2a-version'), query: exchange.query.get('A2A-Version') ?? undefined });
    const { operation, legacy } = resolved;
    const context = {
      principal,
      requestBytes: Buffer.byteLength(text),
      paidBeforeBody,
      lastEventId: lastEventIdOf(exchange),
      ...exchangeContext(exchange, legacy === undefined ? EXTENSIONS_HEADER : LEGACY_EXTENSIONS_HEADER),
    };
    // Proto field names are accepted in 0.3 bodies too (the dispatcher renames the 1.0 ones).
    const params = legacy === undefined ? envelope.params : legacy.fromJsonRpc(withJsonNames(envelope.params) as Record<string, unknown>);
    noteRequest(exchange.response, { operation: operation.name, taskId: taskIdOf(params) });
    if (!operation.streaming) {
      const result = await runUnary(operation, params, { ...context, answersSpliced: legacy === undefined }, options);
      noteResult(exchange.response, result);
      exchange.sendJson(200, { jsonrpc: '2.0', id, result: legacy === undefined ? result : legacy.result(result, 'json') });
      return;
    }
    // A 1.0 stream's frames are written through serializeFramed untranslated (task-stream.ts).
    const plan = await openStream(operation, params, { ...context, answersSpliced: legacy === undefined }, options);
    const prefix = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`;
    const requestId = id;
    pipeTaskStream({
      service: options.service,
      response: exchange.response,
      streams: options.streams,
      plan,
      frame: legacy === undefined ? (json) => `${prefix}${json}}` : (json) => `${prefix}${legacyStreamFrame(json, 'json', plan.closesOn)}}`,
      frameError: (error) => ({ data: JSON.stringify(jsonRpcErrorBody(requestId, toA2AError(error))) }),
    });
  } catch (error) {
    // The gateway's error handler answers it (gateway/error-response.ts), with this request's id.
    throw shaped(error, { binding: 'jsonrpc', requestId: id });
  }
}

/** The task a JSON-RPC request names, for the access log (params.id, params.taskId or message.taskId). */
function taskIdOf(params: unknown): string | undefined {
  if (params === null || typeof params !== 'object') return undefined;
  const p = params as { id?: unknown; taskId?: unknown; message?: { taskId?: unknown } };
  const id = p.id ?? p.taskId ?? p.message?.taskId;
  return typeof id === 'string' ? id.slice(0, 256) : undefined;
}
