// The caller JWT (AdapterEnvironment.callerIdentity) on the a2a adapter's calls. The SDK client is
// shared by every turn, so each turn hands its own signer in the call's context, and an
// interceptor signs a fresh token for every call (a turn may poll or stream for longer than a
// token lives). The downstream fetch then keeps the header off every hop that is not the
// configured origin (downstream-fetch.ts).
import { ClientCallContext, ClientCallContextKey, type BeforeArgs, type CallInterceptor } from '@a2a-js/sdk/client';
import type { AdapterContext, CallerTokens } from '../types.ts';

const SIGNER = new ClientCallContextKey<() => Promise<string>>('a2a-gateway caller token');

/** The call context that carries this turn's signer, or undefined when the backend gets no caller token. */
export function callerCallContext(ctx: AdapterContext, tokens: CallerTokens | undefined, origin: string): ClientCallContext | undefined {
  if (tokens === undefined) return undefined;
  return ClientCallContext.create(SIGNER.set(() => tokens.token(ctx, origin)));
}

/** Puts a fresh token in `header` on every SDK call whose context carries a signer. */
export function callerTokenInterceptor(header: string): CallInterceptor {
  return {
    async before(args: BeforeArgs): Promise<void> {
      const context = args.options?.context;
      const sign = context === undefined ? undefined : SIGNER.get(context);
      if (sign === undefined || args.options === undefined) return;
      args.options.serviceParameters = { ...args.options.serviceParameters, [header]: await sign() };
    },
    async after(): Promise<void> {},
  };
}
