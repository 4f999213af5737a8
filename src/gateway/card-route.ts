// GET <agent base>/.well-known/agent-card.json: public, cacheable (spec 8.6: Cache-Control,
// ETag, Last-Modified, conditional requests), readable from any origin. A request without
// A2A-Version 1.x gets the card in 0.3 shape (a 0.3 client's request), with the 1.0 interfaces
// embedded; the two have their own ETags (Vary: A2A-Version).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';
import { LEGACY_PROTOCOL_VERSION, requestedVersionOf } from '../protocol/version.ts';

const headerOf = (request: IncomingMessage, name: string): string | undefined => {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
};

export async function serveCard(request: IncomingMessage, response: ServerResponse, endpoint: AgentEndpoint): Promise<void> {
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'application/json' });
    response.end(JSON.stringify({ error: { code: 405, status: 'UNIMPLEMENTED', message: 'The agent card is read with GET.', details: [] } }));
    return;
  }
  // Spec 3.6: without A2A-Version a client speaks 0.3, and reads the card in 0.3 shape.
  const version = requestedVersionOf(headerOf(request, 'a2a-version'), undefined);
  let card;
  try {
    const cards = await endpoint.cards.cards();
    card = version === LEGACY_PROTOCOL_VERSION ? cards.legacyCard : cards.card;
  } catch (error) {
    // Only an agent whose card comes from a downstream agent can fail here (it is built at start otherwise).
    const body = JSON.stringify({
      error: {
        code: 503,
        status: 'UNAVAILABLE',
        message: `The card of agent "${endpoint.agent.name}" cannot be built right now (${(error as Error).message}); retry after the Retry-After delay.`,
        details: [],
      },
    });
    response.writeHead(503, { 'Content-Type': 'application/json', 'Retry-After': '5' });
    response.end(body);
    return;
  }
  const headers: Record<string, string> = {
    'Cache-Control': 'public, max-age=300',
    ETag: card.etag,
    'Last-Modified': card.lastModified,
    'Access-Control-Allow-Origin': '*',
    Vary: 'A2A-Version',
  };
  const ifNoneMatch = request.headers['if-none-match'];
  if (ifNoneMatch !== undefined && ifNoneMatch.split(',').some((tag) => tag.trim() === card.etag || tag.trim() === '*')) {
    response.writeHead(304, headers);
    response.end();
    return;
  }
  response.writeHead(200, { ...headers, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(card.json) });
  response.end(request.method === 'HEAD' ? undefined : card.json);
}
