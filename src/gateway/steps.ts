// The request pipeline's steps (app.ts, admission.ts) run in one Hono middleware: each step,
// in the order given, passes the request on (undefined) or answers it (a Response); a failure
// throws to app.onError. A step with nothing to wait for costs no promise and no middleware
// frame, which keeps the bindings' hot path as cheap as when its steps were called by hand.
import type { Context, MiddlewareHandler } from 'hono';
import type { GatewayEnv } from './gateway-env.ts';

export type Step = (c: Context<GatewayEnv>) => Response | undefined | Promise<Response | undefined>;

export function runSteps(...steps: readonly Step[]): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    for (const step of steps) {
      const result = step(c);
      const answer = result instanceof Promise ? await result : result;
      if (answer !== undefined) return answer;
    }
    await next();
    return undefined;
  };
}
