// The gateway's HTTP surface: agent card, health, and the two A2A bindings.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import type { Redis } from 'ioredis';
import type { JWK } from 'jose';
import type { ServedCard } from '../../agent-card/card.ts';
import type { RateLimiter } from '../limits/rate-limiter.ts';
import { registerJwksRoute } from './well-known-keys.ts';
import { createExchange } from '../bindings/http/exchange.ts';
import { headerFieldCount } from '../bindings/http/header-count.ts';
import type { RequestEdge } from '../bindings/http/pipeline.ts';
import { checkReadiness } from './readiness.ts';
import { handleJsonRpc } from '../bindings/jsonrpc/index.ts';
import { handleRest } from '../bindings/rest/index.ts';
import { JSONRPC_PATH, REST_BASE_PATH } from '../bindings/rest/routes.ts';
import type { Logger } from '../logging/logger.ts';
import type { SseStreams } from '../bindings/sse/sse-writer.ts';
import type { TaskService } from '../tasks/service.ts';

export interface GatewayAppOptions {
  service: TaskService;
  card: ServedCard;
  /** For GetExtendedAgentCard; undefined when authentication is off. */
  extendedCard: ServedCard | undefined;
  /** Public keys served at /.well-known/jwks.json (the card signing key). */
  publishedKeys: JWK[];
  rateLimiter: RateLimiter;
  /** The per-request steps of both bindings (pipeline.ts). */
  edge: RequestEdge;
  /** Body bytes discarded after a refusal before the connection closes (refusedBodyDrainBytes). */
  refusedBodyDrainBytes: number;
  redis: Redis;
  logger: Logger;
  streams: SseStreams;
}

export type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

/**
 * The gateway's request listener: the A2A bindings run directly on Node's request and
 * response (src/bindings/http/exchange.ts says why); Hono serves everything else.
 */
export function createGatewayListener(options: GatewayAppOptions): RequestListener {
  const app = new Hono();
  const bindingOptions = {
    service: options.service,
    inputModes: inputModesOf(options.extendedCard ?? options.card),
    rateLimiter: options.rateLimiter,
    extendedCard: options.extendedCard,
    edge: options.edge,
    streams: options.streams,
    logger: options.logger,
  };

  app.get('/.well-known/agent-card.json', (c) => {
    const { card } = options;
    const headers = {
      'Cache-Control': 'public, max-age=300',
      ETag: card.etag,
      'Last-Modified': card.lastModified,
      'Access-Control-Allow-Origin': '*',
    };
    const ifNoneMatch = c.req.header('if-none-match');
    if (ifNoneMatch !== undefined && ifNoneMatch.split(',').some((tag) => tag.trim() === card.etag || tag.trim() === '*')) {
      return c.body(null, 304, headers);
    }
    return c.body(card.json, 200, { ...headers, 'Content-Type': 'application/json' });
  });

  registerJwksRoute(app, () => options.publishedKeys);
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    const readiness = await checkReadiness(options.redis, options.logger);
    return readiness.ready ? c.json({ status: 'ok' }) : c.json({ status: 'unavailable', reason: readiness.reason }, 503, { 'Retry-After': '1' });
  });

  app.notFound((c) =>
    c.json(
      {
        error: {
          code: 404,
          status: 'NOT_FOUND',
          message: `Nothing at ${c.req.method} ${new URL(c.req.url).pathname}. The agent card is at /.well-known/agent-card.json.`,
          details: [],
        },
      },
      404,
    ),
  );
  const honoListener = getRequestListener(app.fetch);
  const restPrefix = `${REST_BASE_PATH}/`;
  const fail = (response: ServerResponse, error: unknown): void => {
    options.logger.error('request handler failed', { error: String((error as Error).stack ?? error) });
    if (!response.headersSent) response.writeHead(500, { 'Content-Type': 'application/json' });
    response.end();
  };
  const exchangeOptions = { drainBytes: options.refusedBodyDrainBytes };
  return (request, response) => {
    const url = request.url ?? '/';
    const pathEnd = url.indexOf('?');
    const path = pathEnd < 0 ? url : url.slice(0, pathEnd);
    const isJsonRpc = path === JSONRPC_PATH || path === `${JSONRPC_PATH}/`;
    const isRest = path === REST_BASE_PATH || path.startsWith(restPrefix);
    if (isJsonRpc || isRest) {
      // Browser-based A2A clients (inspectors, dashboards) call the bindings cross-origin.
      response.setHeader('Access-Control-Allow-Origin', '*');
      response.setHeader('Access-Control-Expose-Headers', 'Retry-After, Allow, WWW-Authenticate, Accept-Signature');
      if (request.method === 'OPTIONS') {
        response.writeHead(204, {
          'Access-Control-Allow-Methods': isJsonRpc ? 'POST' : 'GET, POST, DELETE',
          'Access-Control-Allow-Headers': CORS_REQUEST_HEADERS,
          'Access-Control-Max-Age': '600',
        });
        response.end();
        return;
      }
    }
    if (isJsonRpc) {
      handleJsonRpc(createExchange(request, response, exchangeOptions), bindingOptions).catch((error: unknown) => fail(response, error));
    } else if (isRest) {
      handleRest(createExchange(request, response, exchangeOptions), bindingOptions).catch((error: unknown) => fail(response, error));
    } else if (headerFieldCount(request) > options.edge.maxHeaderCount) {
      // The bindings refuse this in their own error shapes (pipeline.ts); the card and health routes here.
      createExchange(request, response, exchangeOptions).sendJson(431, {
        error: { code: 431, status: 'INVALID_ARGUMENT', message: `The request has more than ${options.edge.maxHeaderCount} header fields (maxHeaderCount); send fewer.`, details: [] },
      });
    } else {
      // The server answers Expect: 100-continue itself only for the bindings (after judging the headers).
      if (request.headers.expect?.toLowerCase() === '100-continue') response.writeContinue();
      void honoListener(request, response);
    }
  };
}

const CORS_REQUEST_HEADERS =
  'Content-Type, Authorization, A2A-Version, A2A-Extensions, Last-Event-ID, Accept, Signature, Signature-Input, Content-Digest';

/** Media types accepted in message parts: the card's input modes plus every skill's. */
function inputModesOf(served: ServedCard): string[] {
  const modes = new Set(served.card.defaultInputModes);
  for (const skill of served.card.skills) for (const mode of skill.inputModes ?? []) modes.add(mode);
  return [...modes];
}
