// The admission steps of an A2A call as Hono middleware, in the order bindings/http/pipeline.ts
// gives them: declared size and content type, credentials from the headers, the protocol
// version, the owner's byte rate from the declared size, the body within its limits, a signed
// body's digest. A route step sets what its route asks of them (admit); on a request without
// one (a card, health, the console) they pass it on untouched. Each failure goes to the app's
// error handler. They run with the pipeline's other steps (steps.ts).
import type { Context } from 'hono';
import { authenticateHead } from '../bindings/http/authenticate.ts';
import { checkBodyHead, declaredLength, noteCaller, versionOf, type Admission } from '../bindings/http/pipeline.ts';
import type { GatewayEnv } from './gateway-env.ts';
import type { Step } from './steps.ts';


/** Starts a request's admission: what its route asks of the steps that follow. */
export function admit(c: Context<GatewayEnv>, admission: Admission): void {
  c.set('admission', admission);
  c.set('admitted', { principal: undefined, version: undefined, body: '', paidBeforeBody: false });
}

/** 413 past the declared size, 415 for a body of the wrong type: before credentials are checked. */
const bodyHead: Step = (c) => {
  const admission = c.get('admission');
  if (admission !== undefined) checkBodyHead(c.get('exchange'), admission);
  return undefined;
};

/** 401 (429 past the per-address failure limit): judged from the headers, no body read yet. */
const credentials: Step = async (c) => {
  const admission = c.get('admission');
  if (admission !== undefined) c.set('caller', await authenticateHead(c.get('exchange'), admission.edge));
  return undefined;
};

const version: Step = (c) => {
  if (c.get('admission')?.checkVersion === true) c.get('admitted').version = versionOf(c.get('exchange'));
  return undefined;
};

/** 429 when the caller known from the headers has no byte rate left for the body it declares. */
const byteRate: Step = (c) => {
  const admission = c.get('admission');
  const known = c.get('caller')?.fromHeaders?.principal;
  if (admission?.readsBody !== true || known === undefined || admission.chargeDeclaredBody === undefined) return undefined;
  const declared = declaredLength(c.get('exchange'));
  if (declared <= 0) return undefined;
  return admission.chargeDeclaredBody(known, declared).then((charged) => {
    c.get('admitted').paidBeforeBody = charged;
    return undefined;
  });
};

/** 413 and 400 as the body arrives past its size or JSON bounds. */
const body: Step = async (c) => {
  const admission = c.get('admission');
  if (admission?.readsBody === true) c.get('admitted').body = await c.get('exchange').readBody({ maxBytes: admission.edge.maxBodyBytes, json: admission.edge.jsonLimits });
  return undefined;
};

/** A signed request's body against its digest: the caller, final. */
const signedBody: Step = async (c) => {
  const caller = c.get('caller');
  if (caller !== undefined) {
    const admitted = c.get('admitted');
    admitted.principal = await caller.complete(admitted.body);
    noteCaller(c.get('exchange'), admitted.principal);
  }
  return undefined;
};

export const ADMISSION_STEPS: readonly Step[] = [bodyHead, credentials, version, byteRate, body, signedBody];
