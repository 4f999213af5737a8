// The control plane's admin API at /admin/v1 (docs/admin-api.md, openapi.yaml): API keys,
// partners and issuers, and the audit. Its guard runs the bindings' admission steps (header
// count, declared size within ADMIN_MAX_BODY_BYTES, JSON content type, credentials from the
// headers, the body within its size and JSON bounds, a signed body's digest) on the canonical
// path the listener handed Hono (request-path.ts), then requires a2a:admin; how far the caller
// reaches (its tenant, or every one with a2a:platform) is the control plane's decision
// (src/control/admin-caller.ts). Refusals go to the gateway's error handler: google.rpc.Status
// JSON, with a BadRequest detail naming each wrong field.
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { anonymousPrincipal } from '../auth/principal.ts';
import { requireScopes } from '../auth/scopes.ts';
import type { RequestEdge } from '../bindings/http/pipeline.ts';
import { noteRequest } from '../bindings/http/request-notes.ts';
import { adminCallerOf, type AdminCaller } from '../control/admin-caller.ts';
import { invalidBody, invalidField } from '../control/admin-errors.ts';
import type { ControlService, ResourceBody } from '../control/control-service.ts';
import { isResourceKind, nameSchemaOf, RESOURCE_KINDS, type ResourceKind } from '../control/resource-kinds.ts';
import { A2AError } from '../protocol/errors.ts';
import type { ExpectedVersion } from '../store/control/control-store.ts';
import { admit, ADMISSION_STEPS } from './admission.ts';
import type { GatewayEnv } from './gateway-env.ts';
import { runSteps, type Step } from './steps.ts';

export const ADMIN_V1_PATH = '/admin/v1';
/** An admin write is a small JSON document (a partner with a few keys); anything larger is refused before it is read. */
export const ADMIN_MAX_BODY_BYTES = 64 * 1024;

export interface AdminV1Options {
  service: ControlService;
  edge: RequestEdge;
}

const WRITES = new Set(['PUT', 'POST']);

const pageQuery = z.strictObject({
  pageSize: z.coerce.number().int().min(1).max(1000).default(100),
  pageToken: z.string().min(1).max(300).optional(),
});

function guard(options: AdminV1Options): ReturnType<typeof runSteps> {
  const edge = { ...options.edge, maxBodyBytes: Math.min(options.edge.maxBodyBytes, ADMIN_MAX_BODY_BYTES) };
  const start: Step = (c) => {
    const exchange = c.get('exchange');
    noteRequest(exchange.response, { operation: `admin ${exchange.method}` });
    admit(c, { edge, content: 'json-if-body', readsBody: WRITES.has(exchange.method), checkVersion: false });
    return undefined;
  };
  const scope: Step = (c) => {
    const exchange = c.get('exchange');
    requireScopes(c.get('admitted').principal ?? anonymousPrincipal(undefined), `${exchange.method} ${exchange.path}`, ['a2a:admin']);
    return undefined;
  };
  return runSteps(start, ...ADMISSION_STEPS, scope);
}

const callerOf = (c: Context<GatewayEnv>): AdminCaller => adminCallerOf(c.get('admitted').principal);

function kindOf(c: Context<GatewayEnv>): ResourceKind {
  const kind = c.req.param('kind') ?? '';
  if (isResourceKind(kind)) return kind;
  throw new A2AError('INVALID_REQUEST', `There is no resource kind "${kind}" here: the admin API manages ${RESOURCE_KINDS.join(', ')}, and the audit.`, {
    httpStatus: 404,
    metadata: { reason: 'RESOURCE_KIND_NOT_FOUND' },
  });
}

function nameOf(c: Context<GatewayEnv>, kind: ResourceKind): string {
  const name = c.req.param('name') ?? '';
  const parsed = nameSchemaOf(kind).safeParse(name);
  if (!parsed.success) throw invalidField('name', `(${JSON.stringify(name.slice(0, 80))}) is not a valid ${kind} name: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}

function pageOf(c: Context<GatewayEnv>): { pageSize: number; pageToken?: string } {
  const parsed = pageQuery.safeParse(Object.fromEntries(c.get('exchange').query));
  if (!parsed.success) throw invalidBody('The query', parsed.error);
  return parsed.data;
}

/** The body as JSON (its size and structure were bounded as it was read). */
function jsonOf(c: Context<GatewayEnv>): unknown {
  const text = c.get('admitted').body;
  if (text.trim() === '') throw invalidField('(body)', 'is empty; send the resource as a JSON object');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalidField('(body)', 'is not JSON; send the resource as a JSON object');
  }
}

/** If-Match "<version>" or *, If-None-Match *: what the write expects; neither: any. */
function expectedOf(c: Context<GatewayEnv>): ExpectedVersion {
  const exchange = c.get('exchange');
  const ifMatch = exchange.header('if-match')?.trim();
  const ifNoneMatch = exchange.header('if-none-match')?.trim();
  if (ifMatch !== undefined && ifNoneMatch !== undefined) throw invalidField('If-None-Match', 'cannot be sent with If-Match; send one');
  if (ifNoneMatch !== undefined) {
    if (ifNoneMatch !== '*') throw invalidField('If-None-Match', 'must be * (create only) on a write');
    return { absent: true };
  }
  if (ifMatch === undefined) return { any: true };
  if (ifMatch === '*') return { exists: true };
  const version = /^"(\d{1,15})"$/.exec(ifMatch)?.[1];
  if (version === undefined) throw invalidField('If-Match', `must be the resource's ETag (a quoted version such as "3") or *, not ${JSON.stringify(ifMatch.slice(0, 40))}`);
  return { version: Number(version) };
}

const etagOf = (resource: ResourceBody): Record<string, string> => (resource.source === 'store' ? { ETag: `"${resource.version}"` } : {});
const NO_STORE = { 'Cache-Control': 'no-store' };

/** Mounts /admin/v1 on `app`, behind its guard. */
export function registerAdminV1Routes(app: Hono<GatewayEnv>, options: AdminV1Options): void {
  const { service } = options;
  const admin = new Hono<GatewayEnv>();
  admin.use('*', guard(options));
  admin.get('/audit', async (c) => c.json(await service.audit(callerOf(c), pageOf(c)), 200, NO_STORE));
  admin.get('/consumers/:name/usage', async (c) => c.json(await service.consumerUsage(callerOf(c), nameOf(c, 'consumers')), 200, NO_STORE));
  admin.get('/:kind', (c) => c.json(service.list(callerOf(c), kindOf(c), pageOf(c)), 200, NO_STORE));
  admin.post('/:kind', async (c) => {
    const kind = kindOf(c);
    if (kind !== 'api-keys') throw invalidField('kind', `${kind} are created with PUT ${ADMIN_V1_PATH}/${kind}/{name}; only api-keys take POST (the name is made for you)`);
    const made = await service.createApiKey(callerOf(c), jsonOf(c));
    return c.json({ ...made.resource, key: made.key }, 201, { ...etagOf(made.resource), ...NO_STORE, Location: `${ADMIN_V1_PATH}/api-keys/${made.resource.name}` });
  });
  admin.get('/:kind/:name', (c) => {
    const kind = kindOf(c);
    const resource = service.get(callerOf(c), kind, nameOf(c, kind));
    return c.json(resource, 200, { ...etagOf(resource), ...NO_STORE });
  });
  admin.put('/:kind/:name', async (c) => {
    const kind = kindOf(c);
    const name = nameOf(c, kind);
    const expected = expectedOf(c);
    const written = await service.put(callerOf(c), kind, name, jsonOf(c), expected);
    const body = written.key === undefined ? written.resource : { ...written.resource, key: written.key };
    return c.json(body, written.created ? 201 : 200, { ...etagOf(written.resource), ...NO_STORE, ...(written.created ? { Location: `${ADMIN_V1_PATH}/${kind}/${name}` } : {}) });
  });
  admin.delete('/:kind/:name', async (c) => {
    const kind = kindOf(c);
    await service.remove(callerOf(c), kind, nameOf(c, kind), expectedOf(c));
    return c.body(null, 204);
  });
  app.route(ADMIN_V1_PATH, admin);
}
