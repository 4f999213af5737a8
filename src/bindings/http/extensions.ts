// The extensions step of both HTTP bindings: which extensions the request names, and the
// response header that says which ones it activated (A2A-Extensions; X-A2A-Extensions for 0.3).
import { EXTENSIONS_HEADER, requestedExtensionsOf } from '../../extensions/activation.ts';
import type { RequestContext } from '../../operations/dispatch.ts';
import type { Exchange } from './exchange.ts';

export function extensionsContext(exchange: Pick<Exchange, 'header' | 'response'>, responseHeader: string = EXTENSIONS_HEADER): Pick<RequestContext, 'requestedExtensions' | 'announceExtensions'> {
  return {
    requestedExtensions: requestedExtensionsOf((name) => exchange.header(name)),
    announceExtensions: (uris) => {
      if (uris.length > 0 && !exchange.response.headersSent) exchange.response.setHeader(responseHeader, uris.join(', '));
    },
  };
}
