// The credentials step: authenticate from the headers (no body read yet), finish a signed
// request's check once the body is known, and count every failure against the client's
// address (limits.unauthenticatedPerSecond).
import type { Authenticator } from '../../auth/authenticator.ts';
import type { Principal } from '../../auth/principal.ts';
import type { UnauthenticatedLimiter } from '../../limits/unauthenticated-limiter.ts';
import { A2AError } from '../../protocol/errors.ts';
import type { Exchange } from './exchange.ts';
import type { ProxyTrust } from './proxy-trust.ts';

export interface AuthenticationStep {
  authenticator: Authenticator;
  unauthenticated: UnauthenticatedLimiter;
  proxyTrust: ProxyTrust;
  /** publicUrl: signed requests cover the target URI as the client addressed it. */
  publicUrl: URL;
}

export interface PendingCaller {
  /** The caller, after a signed request's body matched its digest. */
  complete(body: string): Promise<Principal | undefined>;
}

export async function authenticateHead(exchange: Exchange, step: AuthenticationStep): Promise<PendingCaller> {
  const refuse = async (error: unknown): Promise<never> => {
    if (error instanceof A2AError && error.kind === 'UNAUTHENTICATED') {
      throw await step.unauthenticated.refusalFor(step.proxyTrust.clientAddress(exchange.request), error);
    }
    throw error;
  };
  let authentication;
  try {
    authentication = await step.authenticator.authenticate({
      method: exchange.method,
      targetUri: `${step.proxyTrust.publicBase(exchange.request, step.publicUrl)}${exchange.target}`,
      header: (name) => exchange.header(name),
      headerValues: (name) => exchange.headerValues(name),
    });
  } catch (error) {
    return refuse(error);
  }
  return { complete: (body) => authentication.complete(body).catch(refuse) };
}
