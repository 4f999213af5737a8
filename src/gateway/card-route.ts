// GET <agent base>/.well-known/agent-card.json: public, cacheable (spec 8.6: Cache-Control,
// ETag, Last-Modified, conditional requests), readable from any origin. The card is the 1.0 card
// unless 0.3 is asked for by name (header or query parameter `A2A-Version: 0.3`): a card request
// carries no protocol version of its own, and the 1.0 card schema admits no 0.3 fields, so a
// card that served both could satisfy neither. The two have their own ETags (Vary: A2A-Version).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';
import { LEGACY_PROTOCOL_VERSION, PROTOCOL_VERSION, requestedVersionOf } from '../protocol/version.ts';

const headerOf = (request: IncomingMessage, name: string): string | undefined => {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
};

/**
 * The card shape asked for: 0.3 only when named. Spec 3.6 reads an empty A2A-Version as 0.3 for
 * calls; the official 1.0 SDK and the TCK fetch the card without it and validate it against the
 * 1.0 schema, so the default card is 1.0 and 0.3 clients are given `?A2A-Version=0.3`.
 */
function requestedCardVersion(request: IncomingMessage): string {
  const header = headerOf(request, 'a2a-version');
  const query = new URL(request.url ?? '/', 'http://card.invalid').searchParams.get('A2A-Version') ?? undefined;
  if ((header ?? query ?? '').trim() === '') return PROTOCOL_VERSION;
  return requestedVersionOf(header, query);
}

export async function serveCard(request: IncomingMessage, response: ServerResponse, endpoint: AgentEndpoint): Promise<void> {
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'application/json' });
    response.end(JSON.stringify({ error: { code: 405, status: 'UNIMPLEMENTED', message: 'The agent card is read with GET.', details: [] } }));
    return;
  }
  const version = requestedCardVersion(request);
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
