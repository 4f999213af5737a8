// The operation registry: the A2A operations and the methods of this gateway's extensions,
// each declared once. The JSON-RPC dispatcher, the HTTP+JSON router, the gRPC service (the
// operations that carry a `grpc` mapping, src/bindings/grpc), the 0.3 layer, the scope check,
// the card's scope text and the openapi.yaml agreement test all read it.
import { SCOPES, type Scope } from '../config/schema.ts';
import { GATEWAY_EXTENSIONS } from '../extensions/gateway-extensions.ts';
import type { GatewayExtension } from '../extensions/definition.ts';
import { A2A_OPERATIONS } from './a2a-operations.ts';
import { OPERATOR_OPERATIONS } from './operator-operations.ts';
import type { Operation, RestRoute } from './definition.ts';

/** A route with the operation it serves. */
export interface OperationRoute extends RestRoute {
  operation: Operation;
}

export class OperationRegistry {
  private readonly byNameMap = new Map<string, Operation>();
  private readonly byLegacyMethod = new Map<string, Operation>();
  private readonly extensionOf = new Map<string, string>();

  /**
   * Checks the declarations once, at start: a name, a legacy name or a route declared twice, or
   * an operation without a known scope, is a programming error and stops the process here
   * rather than letting a request through unchecked.
   */
  constructor(
    readonly operations: readonly Operation[],
    readonly extensions: readonly GatewayExtension[] = [],
  ) {
    const routes = new Set<string>();
    const claimRoute = (route: RestRoute, where: string): void => {
      const key = `${route.method} ${route.path}`;
      if (routes.has(key)) throw new Error(`operation registry: the route ${key} is declared twice (${where})`);
      routes.add(key);
    };
    for (const operation of operations) {
      if (this.byNameMap.has(operation.name)) throw new Error(`operation registry: ${operation.name} is declared twice`);
      if (!(SCOPES as readonly string[]).includes(operation.scope)) {
        throw new Error(`operation registry: ${operation.name} declares the scope ${JSON.stringify(operation.scope)}, which is not one of ${SCOPES.join(', ')}`);
      }
      this.byNameMap.set(operation.name, operation);
      for (const route of operation.rest) claimRoute(route, operation.name);
      if (operation.legacy !== undefined) {
        if (this.byLegacyMethod.has(operation.legacy.jsonRpcMethod)) throw new Error(`operation registry: the 0.3 method ${operation.legacy.jsonRpcMethod} is declared twice`);
        this.byLegacyMethod.set(operation.legacy.jsonRpcMethod, operation);
        for (const route of operation.legacy.rest) claimRoute(route, `${operation.name} (0.3)`);
      }
    }
    for (const extension of extensions) {
      for (const method of extension.methods) {
        if (this.byNameMap.get(method.name) !== method) throw new Error(`operation registry: ${method.name} of extension ${extension.uri} is not registered`);
        this.extensionOf.set(method.name, extension.uri);
      }
    }
  }

  /** The operation a 1.0 JSON-RPC method (its A2A name) calls. */
  byName(name: string): Operation | undefined {
    return this.byNameMap.get(name);
  }

  /** The operation a 0.3 JSON-RPC method (`message/send`, …) calls. */
  byLegacyJsonRpcMethod(method: string): Operation | undefined {
    return this.byLegacyMethod.get(method);
  }

  /** The extension whose method an operation is, if any: calling it activates that extension. */
  extensionUriOf(operation: Operation): string | undefined {
    return this.extensionOf.get(operation.name);
  }

  /** The 1.0 HTTP+JSON routes, in declaration order. */
  restRoutes(): OperationRoute[] {
    return this.operations.flatMap((operation) => operation.rest.map((route) => ({ ...route, operation })));
  }

  /** The 0.3 HTTP+JSON routes, in declaration order. */
  legacyRestRoutes(): OperationRoute[] {
    return this.operations.flatMap((operation) => (operation.legacy?.rest ?? []).map((route) => ({ ...route, operation })));
  }

  /** Which scope each operation needs, by name. */
  scopes(): Record<string, Scope> {
    return Object.fromEntries(this.operations.map((operation) => [operation.name, operation.scope]));
  }
}

/** Every operation this gateway serves: A2A 1.0's, its extensions' methods, then the operators'. */
export const OPERATIONS = new OperationRegistry(
  [...A2A_OPERATIONS, ...GATEWAY_EXTENSIONS.flatMap((extension) => extension.methods), ...OPERATOR_OPERATIONS],
  GATEWAY_EXTENSIONS,
);
