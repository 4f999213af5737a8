// What both HTTP bindings hand the dispatcher from the exchange besides the principal: which
// extensions the request names, the response header that says which ones it activated
// (A2A-Extensions; X-A2A-Extensions for 0.3), and the trace context of the request's span.
import { EXTENSIONS_HEADER, requestedExtensionsOf } from '../../extensions/activation.ts';
import type { RequestContext } from '../../operations/dispatch.ts';
import type { Exchange } from './exchange.ts';
import { notesOf } from './request-notes.ts';

export function exchangeContext(
  exchange: Pick<Exchange, 'header' | 'response'>,
  responseHeader: string = EXTENSIONS_HEADER,
): Pick<RequestContext, 'requestedExtensions' | 'announceExtensions' | 'trace' | 'header'> {
  return {
    header: (name) => exchange.header(name),
    requestedExtensions: requestedExtensionsOf((name) => exchange.header(name)),
    announceExtensions: (uris) => {
      if (uris.length > 0 && !exchange.response.headersSent) exchange.response.setHeader(responseHeader, uris.join(', '));
    },
    trace: notesOf(exchange.response).trace,
  };
}
