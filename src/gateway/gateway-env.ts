// What every step of the gateway's request pipeline (app.ts) can read from Hono's context: the
// Node request and response (the bindings write straight to them, exchange.ts says why), the
// exchange over them, and the surface the request's canonical path is for.
import type { HttpBindings } from '@hono/node-server';
import type { Exchange } from '../bindings/http/exchange.ts';
import type { Surface } from './surface.ts';

export interface GatewayEnv {
  Bindings: HttpBindings;
  Variables: {
    exchange: Exchange;
    surface: Surface;
  };
}
