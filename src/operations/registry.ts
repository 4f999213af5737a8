// The operation registry: every operation the catalog declares (src/protocol/operations), each
// with its handler. The JSON-RPC dispatcher, the HTTP+JSON router, the gRPC service (the
// operations that carry a `grpc` mapping, src/bindings/grpc), the 0.3 layer, the scope check
// and the openapi.yaml agreement test all read it.
import { GATEWAY_EXTENSIONS } from '../extensions/gateway-extensions.ts';
import type { GatewayExtension } from '../extensions/definition.ts';
import { OPERATION_SPECS, operationScopes } from '../protocol/operations/catalog.ts';
import type { OperationSpec, RestRoute } from '../protocol/operations/spec.ts';
import { SCOPES, type Scope } from '../protocol/scopes.ts';
import { A2A_OPERATIONS } from './a2a-operations.ts';
import type { Operation } from './definition.ts';
import { EXTENSION_OPERATIONS } from './extension-operations.ts';
import { OPERATOR_OPERATIONS } from './operator-operations.ts';
import { SUBSCRIPTION_OPERATIONS } from './subscription-operations.ts';

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
        if (!this.byNameMap.has(method.name)) throw new Error(`operation registry: ${method.name} of extension ${extension.uri} is not registered`);
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
    return operationScopes(this.operations);
  }
}

/**
 * The handlers in the catalog's order. A spec without a handler, a handler whose name the
 * catalog does not declare, or one defined over another spec of that name, is a programming
 * error that stops the start.
 */
export function inCatalogOrder(handlers: readonly Operation[], specs: readonly OperationSpec[] = OPERATION_SPECS): Operation[] {
  const byName = new Map(handlers.map((operation) => [operation.name, operation]));
  if (byName.size !== handlers.length) throw new Error('operation registry: an operation has two handlers');
  for (const operation of handlers) {
    if (!specs.some((spec) => spec.name === operation.name)) throw new Error(`operation registry: ${operation.name} has a handler but no spec in the catalog`);
  }
  return specs.map((spec) => {
    const operation = byName.get(spec.name);
    if (operation === undefined) throw new Error(`operation registry: ${spec.name} is declared but has no handler`);
    const fields = operation as unknown as Record<string, unknown>;
    if (!Object.entries(spec).every(([key, value]) => fields[key] === value)) throw new Error(`operation registry: the handler of ${spec.name} is defined over another spec`);
    return operation;
  });
}

/** Every operation this gateway serves: A2A 1.0's, its extensions' methods, then the operators'. */
export const OPERATIONS = new OperationRegistry(inCatalogOrder([...A2A_OPERATIONS, ...EXTENSION_OPERATIONS, ...SUBSCRIPTION_OPERATIONS, ...OPERATOR_OPERATIONS]), GATEWAY_EXTENSIONS);
