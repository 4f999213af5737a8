// Errors on the 0.3 HTTP+JSON binding: a bare {code, message, data} body (the JSON-RPC code of
// the error, no google.rpc.Status wrapper) with the HTTP status the 1.0 binding would use. The
// 0.3 JSON-RPC binding's errors are the 1.0 envelope already ({code, message, data}).
import type { A2AError } from '../../protocol/errors.ts';

export function legacyRestErrorBody(error: A2AError): Record<string, unknown> {
  return { code: error.mapping.jsonRpcCode, message: error.message, data: { details: error.details() } };
}
