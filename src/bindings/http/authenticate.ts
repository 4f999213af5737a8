// The credentials step: authenticate from the headers (no body read yet), finish a signed
// request's check once the body is known, and count every failure against the client's
// address (limits.unauthenticatedPerSecond). The gRPC binding takes the same step with its
// metadata as the headers (authenticateCaller).
import type { Authenticator, CallerRequest } from '../../auth/authenticator.ts';
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
  /** The caller before the body is read, when the headers alone decide it (see Authentication.fromHeaders). */
  readonly fromHeaders?: { principal: Principal | undefined };
}

/** Authenticates a request from its headers; failures count against the client's address (read only then). */
export async function authenticateCaller(request: CallerRequest, clientAddress: () => string, step: Pick<AuthenticationStep, 'authenticator' | 'unauthenticated'>): Promise<PendingCaller> {
  const refuse = async (error: unknown): Promise<never> => {
    if (error instanceof A2AError && error.kind === 'UNAUTHENTICATED') {
      throw await step.unauthenticated.refusalFor(clientAddress(), error);
    }
    throw error;
  };
  let authentication;
  try {
    authentication = await step.authenticator.authenticate(request);
  } catch (error) {
    return refuse(error);
  }
  return { complete: (body) => authentication.complete(body).catch(refuse), ...(authentication.fromHeaders === undefined ? {} : { fromHeaders: authentication.fromHeaders }) };
}

export function authenticateHead(exchange: Exchange, step: AuthenticationStep): Promise<PendingCaller> {
  return authenticateCaller(
    {
      method: exchange.method,
      targetUri: `${step.proxyTrust.publicBase(exchange.request, step.publicUrl)}${exchange.target}`,
      header: (name) => exchange.header(name),
      headerValues: (name) => exchange.headerValues(name),
    },
    () => step.proxyTrust.clientAddress(exchange.request),
    step,
  );
}
