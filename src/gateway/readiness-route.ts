// GET /readyz on the gateway's port. A probe sends no credentials and gets what it always got:
// ready or not, and when not, only a short reason. A platform operator who sends credentials
// (a2a:operator, which a2a:admin implies, with a2a:platform: the issuers are the deployment's,
// not a tenant's) also gets `detail`: each trusted issuer's state, so a discovery or JWKS fetch
// that fails is seen where readiness is looked at, though it does not make the gateway unready
// (it serves on with the keys it had). Credentials that are presented are judged like the admin
// surfaces' (401 if they do not verify, 403 naming the missing scopes).
import type { Hono } from 'hono';
import type { IssuerStatus } from '../auth/jwt/jwt-verifier.ts';
import { requireScopes } from '../auth/scopes.ts';
import type { RequestEdge } from '../bindings/http/pipeline.ts';
import type { Scope } from '../protocol/scopes.ts';
import { admit, ADMISSION_STEPS } from './admission.ts';
import type { GatewayEnv } from './gateway-env.ts';
import { checkReadiness, type ReadinessProbe } from './readiness.ts';
import { runSteps, type Step } from './steps.ts';

export const READINESS_DETAIL_SCOPES: readonly Scope[] = ['a2a:operator', 'a2a:platform'];

export interface ReadinessRouteOptions {
  probe: ReadinessProbe;
  edge: RequestEdge;
  /** The trusted issuers' state (none when authentication is off). */
  issuers: () => readonly IssuerStatus[];
}

/** What an operator's /readyz adds. */
export interface ReadinessDetail {
  issuers: readonly IssuerStatus[];
}

const presentsCredentials = (c: Parameters<Step>[0]): boolean => {
  const exchange = c.get('exchange');
  return ['authorization', 'signature', 'signature-input'].some((name) => exchange.headerValues(name).length > 0);
};

export function registerReadinessRoute(app: Hono<GatewayEnv>, options: ReadinessRouteOptions): void {
  const start: Step = (c) => {
    if (presentsCredentials(c)) admit(c, { edge: options.edge, content: 'json-if-body', readsBody: false, checkVersion: false });
    return undefined;
  };
  const scopes: Step = (c) => {
    if (c.get('admission') === undefined) return undefined;
    const principal = c.get('admitted').principal;
    // Authentication off: there are no issuers to show, and nobody to tell apart.
    if (principal !== undefined) requireScopes(principal, 'GET /readyz with detail', READINESS_DETAIL_SCOPES);
    return undefined;
  };
  app.get('/readyz', runSteps(start, ...ADMISSION_STEPS, scopes), async (c) => {
    const readiness = await checkReadiness(options.probe);
    const admitted = c.get('admission') === undefined ? undefined : c.get('admitted').principal;
    const detail: ReadinessDetail | undefined = admitted === undefined ? undefined : { issuers: options.issuers() };
    const extra = detail === undefined ? {} : { detail };
    const headers: Record<string, string> = detail === undefined ? {} : { 'Cache-Control': 'no-store' };
    return readiness.ready
      ? c.json({ status: 'ok', ...extra }, 200, headers)
      : c.json({ status: 'unavailable', reason: readiness.reason, ...extra }, 503, { ...headers, 'Retry-After': '1' });
  });
}
