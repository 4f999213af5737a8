// Static checks of openapi.yaml: it is a valid OpenAPI 3.1 document, and its HTTP+JSON paths
// agree with the router's table (REST_ROUTES) in both directions, with and without `/{tenant}`.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { compileErrors, validate } from '@readme/openapi-parser';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { REST_ROUTES, type RestRoute } from '../src/bindings/rest/routes.ts';
import { JSONRPC_PATH, REST_BASE_PATH } from '../src/protocol/endpoints.ts';

const SPEC_PATH = fileURLToPath(new URL('../openapi.yaml', import.meta.url));

type HttpMethod = 'get' | 'put' | 'post' | 'delete' | 'options' | 'head' | 'patch' | 'trace';
const HTTP_METHODS: readonly HttpMethod[] = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

interface Operation {
  operationId?: string;
  [key: string]: unknown;
}
type PathItem = Partial<Record<HttpMethod, Operation>> & Record<string, unknown>;
interface Document {
  openapi: string;
  paths: Record<string, PathItem>;
  [key: string]: unknown;
}

const loadDocument = (): Document => parse(readFileSync(SPEC_PATH, 'utf8')) as Document;

const TENANT_BASE = `${REST_BASE_PATH}/{tenant}`;

/** The operationId the document uses for a route: the A2A name, `Get` for the GET subscribe, `Tenant` when prefixed. */
function expectedOperationId(route: RestRoute, tenant: boolean): string {
  const getSubscribe = route.operation === 'SubscribeToTask' && route.method === 'GET';
  // A route also served under /v1/ (the subscriptions) documents that spelling as its own operation.
  const v1 = route.path.startsWith('/v1/') ? 'V1' : '';
  return `${route.operation}${getSubscribe ? 'Get' : ''}${v1}${tenant ? 'Tenant' : ''}`;
}

/** Every `METHOD path` pair the document declares below the HTTP+JSON base path. */
function documentedRestOperations(doc: Document): Array<{ method: string; path: string }> {
  const found: Array<{ method: string; path: string }> = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    if (path !== REST_BASE_PATH && !path.startsWith(`${REST_BASE_PATH}/`)) continue;
    for (const method of HTTP_METHODS) {
      if (item[method] !== undefined) found.push({ method: method.toUpperCase(), path });
    }
  }
  return found;
}

describe('openapi.yaml', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await validate(SPEC_PATH);
    if (!result.valid) {
      expect.fail(compileErrors(result));
    }
    expect(result.specification).toBe('OpenAPI');
    expect(loadDocument().openapi).toMatch(/^3\.1\./);
  });

  it('documents every REST_ROUTES entry, with and without the tenant prefix', () => {
    const doc = loadDocument();
    const missing: string[] = [];
    const wrongIds: string[] = [];
    for (const route of REST_ROUTES) {
      const method = route.method.toLowerCase() as HttpMethod;
      for (const [base, tenant] of [
        [REST_BASE_PATH, false],
        [TENANT_BASE, true],
      ] as const) {
        const path = `${base}${route.path}`;
        const operation = doc.paths[path]?.[method];
        if (operation === undefined) {
          missing.push(`${route.method} ${path}`);
          continue;
        }
        const want = expectedOperationId(route, tenant);
        if (operation.operationId !== want) {
          wrongIds.push(`${route.method} ${path}: operationId ${String(operation.operationId)}, expected ${want}`);
        }
      }
    }
    expect(missing, 'routes in REST_ROUTES missing from openapi.yaml').toEqual([]);
    expect(wrongIds, 'operationIds that do not follow the A2A operation names').toEqual([]);
  });

  it('documents no REST operation that REST_ROUTES lacks', () => {
    const doc = loadDocument();
    const known = new Set<string>();
    for (const route of REST_ROUTES) {
      known.add(`${route.method} ${REST_BASE_PATH}${route.path}`);
      known.add(`${route.method} ${TENANT_BASE}${route.path}`);
    }
    const extra = documentedRestOperations(doc)
      .map(({ method, path }) => `${method} ${path}`)
      .filter((key) => !known.has(key));
    expect(extra, 'operations in openapi.yaml that the router does not serve').toEqual([]);
    expect(documentedRestOperations(doc)).toHaveLength(REST_ROUTES.length * 2);
  });

  it('documents the JSON-RPC endpoint at JSONRPC_PATH', () => {
    const doc = loadDocument();
    const item = doc.paths[JSONRPC_PATH];
    expect(item, `path ${JSONRPC_PATH}`).toBeDefined();
    expect(item?.post, `POST ${JSONRPC_PATH}`).toBeDefined();
    const rpcPaths = Object.entries(doc.paths)
      .filter(([, pathItem]) => HTTP_METHODS.some((method) => pathItem[method] !== undefined))
      .map(([path]) => path)
      .filter((path) => path.includes('jsonrpc'));
    expect(rpcPaths).toEqual([JSONRPC_PATH]);
  });
});
