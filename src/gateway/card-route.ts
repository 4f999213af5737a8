// GET <agent base>/.well-known/agent-card.json: public, cacheable (spec 8.6: Cache-Control,
// ETag, Last-Modified, conditional requests), readable from any origin.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';

export async function serveCard(request: IncomingMessage, response: ServerResponse, endpoint: AgentEndpoint): Promise<void> {
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'application/json' });
    response.end(JSON.stringify({ error: { code: 405, status: 'UNIMPLEMENTED', message: 'The agent card is read with GET.', details: [] } }));
    return;
  }
  let card;
  try {
    card = (await endpoint.cards.cards()).card;
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
