// Content-Type, judged from the headers before the body is read (spec 9.1, 11.1): a body the
// gateway would not parse is refused with ContentTypeNotSupportedError (-32005), HTTP 415.
import { A2AError } from '../../protocol/errors.ts';
import { isJsonContentType } from '../errors.ts';
import type { Exchange } from './exchange.ts';

export type BodyContentRule =
  /** JSON-RPC: every request is a JSON document, whatever its length. */
  | 'json-required'
  /** HTTP+JSON: a body, when the request has one, is JSON; a bodiless request needs no type. */
  | 'json-if-body';

export function checkContentType(exchange: Pick<Exchange, 'header' | 'hasBody'>, rule: BodyContentRule): void {
  if (rule === 'json-if-body' && !exchange.hasBody) return;
  const contentType = exchange.header('content-type');
  if (isJsonContentType(contentType)) return;
  const shown = contentType === undefined ? 'missing' : `"${contentType}"`;
  throw new A2AError('CONTENT_TYPE_NOT_SUPPORTED', `Unsupported Content-Type (${shown}): send application/json or application/a2a+json.`, {
    httpStatus: 415,
    metadata: { contentType: contentType ?? '' },
    violations: [{ field: 'Content-Type', description: `is ${shown}; send application/json` }],
  });
}
