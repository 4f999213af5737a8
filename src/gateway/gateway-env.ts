// What every step of the gateway's request pipeline (app.ts) can read from Hono's context: the
// Node request and response (the bindings write straight to them, exchange.ts says why), the
// exchange over them, and the surface the request's canonical path is for.
import type { HttpBindings } from '@hono/node-server';
import type { ErrorShape } from '../bindings/errors.ts';
import type { PendingCaller } from '../bindings/http/authenticate.ts';
import type { Exchange } from '../bindings/http/exchange.ts';
import type { Admission, AdmittedRequest } from '../bindings/http/pipeline.ts';
import type { RestRoute } from '../bindings/rest/index.ts';
import type { Surface } from './surface.ts';

export interface GatewayEnv {
  Bindings: HttpBindings;
  Variables: {
    exchange: Exchange;
    surface: Surface;
    /** The shape a failure is answered in once the route decided it (an HTTP+JSON route's version). */
    errorShape?: ErrorShape;
    /** What the route asks of the admission steps (admission.ts); unset, they pass the request on. */
    admission?: Admission;
    /** The caller as the headers say, until a signed body is checked. */
    caller?: PendingCaller;
    admitted: AdmittedRequest;
    restRoute: RestRoute;
  };
}
