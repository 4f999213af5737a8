// The HTTP+JSON binding's routes (spec 5.3, 11.3), read from the operation registry: the 1.0
// routes, each with and without the optional `/{tenant}` prefix, and the 0.3 routes (`/v1/…`,
// no tenant). One table serves the router, the OpenAPI agreement test and the docs.
import type { Operation } from '../../operations/definition.ts';
import { OPERATIONS, type OperationRoute } from '../../operations/registry.ts';
import type { HttpMethod } from '../../protocol/operations/spec.ts';

/** A route as the docs and tests name it. */
export interface RestRoute {
  method: HttpMethod;
  path: string;
  /** The operation's name. */
  operation: string;
}

export interface RouteMatch {
  operation: Operation;
  route: OperationRoute;
  params: Record<string, string>;
  tenant: string | undefined;
}

interface CompiledRoute {
  route: OperationRoute;
  names: string[];
  pattern: RegExp;
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^$()|[\]\\]/g, '\\$&');

function compile(route: OperationRoute, tenantPrefix: boolean): CompiledRoute {
  const names: string[] = [];
  const source = route.path
    .split(/(\{[a-zA-Z]+\})/)
    .map((piece) => {
      const name = /^\{([a-zA-Z]+)\}$/.exec(piece)?.[1];
      if (name === undefined) return escapeRegExp(piece);
      names.push(name);
      // An id segment stops at '/' and at the ':verb' suffix.
      return '([^/:]+)';
    })
    .join('');
  return { route, names, pattern: new RegExp(tenantPrefix ? `^(?:/([^/:]+))?${source}$` : `^()${source}$`) };
}

/** Matches request paths (below the binding's base) against one set of routes. */
export class RestRouter {
  private readonly compiled: CompiledRoute[];

  constructor(routes: readonly OperationRoute[], options: { tenantPrefix: boolean }) {
    this.compiled = routes.map((route) => compile(route, options.tenantPrefix));
  }

  /**
   * Match a path against the table. Returns `undefined` for an unknown path, and
   * `'method-not-allowed'` when the path exists for another method. Throws URIError for
   * malformed percent-encoding.
   */
  match(method: string, path: string): RouteMatch | 'method-not-allowed' | undefined {
    let pathMatched = false;
    // A route matched as written wins over one matched with a tenant prefix: "/operator/tasks"
    // is the operators' list, not the task list of tenant "operator".
    for (const withTenant of [false, true]) {
      for (const compiled of this.compiled) {
        const match = compiled.pattern.exec(path);
        if (match === null) continue;
        const tenantRaw = match[1] || undefined;
        if ((tenantRaw !== undefined) !== withTenant) continue;
        // "/tasks/tasks" is task "tasks", not the task list of tenant "tasks".
        if (tenantRaw === 'tasks') continue;
        pathMatched = true;
        if (compiled.route.method !== method) continue;
        const params: Record<string, string> = {};
        compiled.names.forEach((name, index) => {
          params[name] = decodeURIComponent(match[index + 2] ?? '');
        });
        return {
          operation: compiled.route.operation,
          route: compiled.route,
          params,
          tenant: tenantRaw === undefined ? undefined : decodeURIComponent(tenantRaw),
        };
      }
      // The path is a route as written, for another method: that is the answer (405), not a tenant's route.
      if (pathMatched) return 'method-not-allowed';
    }
    return pathMatched ? 'method-not-allowed' : undefined;
  }

  /** Methods served on a path (for the Allow header of a 405). */
  allowedMethods(path: string): string[] {
    const methods = new Set<string>();
    for (const method of ['GET', 'POST', 'DELETE']) {
      const match = this.match(method, path);
      if (match !== undefined && match !== 'method-not-allowed') methods.add(method);
    }
    return [...methods];
  }
}

/** The A2A 1.0 routes, with and without `/{tenant}`. */
export const REST_ROUTER = new RestRouter(OPERATIONS.restRoutes(), { tenantPrefix: true });
/** The A2A 0.3 routes (`/v1/…`), for requests whose A2A-Version is 0.3 or absent. */
export const LEGACY_REST_ROUTER = new RestRouter(OPERATIONS.legacyRestRoutes(), { tenantPrefix: false });

/** The 1.0 routes by operation name, in declaration order. */
export const REST_ROUTES: readonly RestRoute[] = OPERATIONS.restRoutes().map(({ method, path, operation }) => ({ method, path, operation: operation.name }));

export type { OperationRoute };
