// The gateway's HTTP surface: agent card, health, and the two A2A bindings.
import type { HttpBindings } from '@hono/node-server';
import { Hono } from 'hono';
import type { Redis } from 'ioredis';
import type { ServedCard } from '../../agent-card/card.ts';
import { jsonRpcBinding } from '../bindings/jsonrpc/index.ts';
import { restBinding } from '../bindings/rest/index.ts';
import { JSONRPC_PATH, REST_BASE_PATH } from '../bindings/rest/routes.ts';
import type { Logger } from '../logging/logger.ts';
import type { TaskService } from '../tasks/service.ts';

export interface GatewayAppOptions {
  service: TaskService;
  card: ServedCard;
  redis: Redis;
  logger: Logger;
  maxBodyBytes: number;
  heartbeatMs: number;
}

export function createGatewayApp(options: GatewayAppOptions): Hono<{ Bindings: HttpBindings }> {
  const app = new Hono<{ Bindings: HttpBindings }>();
  const bindingOptions = {
    service: options.service,
    inputModes: inputModesOf(options.card),
    maxBodyBytes: options.maxBodyBytes,
    heartbeatMs: options.heartbeatMs,
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

  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    try {
      await options.redis.ping();
      return c.json({ status: 'ok' });
    } catch (error) {
      return c.json({ status: 'unavailable', reason: `Redis: ${(error as Error).message}` }, 503, { 'Retry-After': '1' });
    }
  });

  app.route(JSONRPC_PATH, jsonRpcBinding(bindingOptions));
  app.route(REST_BASE_PATH, restBinding(bindingOptions));
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
  return app;
}

/** Media types accepted in message parts: the card's input modes plus every skill's. */
function inputModesOf(served: ServedCard): string[] {
  const modes = new Set(served.card.defaultInputModes);
  for (const skill of served.card.skills) for (const mode of skill.inputModes ?? []) modes.add(mode);
  return [...modes];
}
