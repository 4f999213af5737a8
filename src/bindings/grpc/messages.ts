// The gRPC service as the operation registry declares it: for every operation with a `grpc`
// mapping, the A2AService method of a2a.proto, whose binary codec comes from the official SDK
// (@a2a-js/sdk/server/grpc, generated from the same proto), and its ProtoJSON conversion (the
// SDK's generated toJSON / fromJSON), so the operations see the same JSON they get over
// JSON-RPC and HTTP+JSON. No operation is served over gRPC that the registry does not declare.
import {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetExtendedAgentCardRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  SendMessageRequest,
  SendMessageResponse,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { A2AService } from '@a2a-js/sdk/server/grpc';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import type { Operation } from '../../operations/definition.ts';
import type { OperationRegistry } from '../../operations/registry.ts';

/** The proto package and service every method path starts with (a2a.proto). */
export const GRPC_SERVICE_NAME = 'lf.a2a.v1.A2AService';

interface JsonCodec {
  toJSON(message: never): unknown;
  fromJSON(json: never): unknown;
}

const EMPTY: JsonCodec = { toJSON: () => ({}), fromJSON: () => ({}) };

/** ProtoJSON conversion of every message type the registry's gRPC mappings name. */
const JSON_CODECS: Record<string, JsonCodec> = {
  SendMessageRequest,
  SendMessageResponse,
  StreamResponse,
  GetTaskRequest,
  Task,
  ListTasksRequest,
  ListTasksResponse,
  CancelTaskRequest,
  SubscribeToTaskRequest,
  TaskPushNotificationConfig,
  GetTaskPushNotificationConfigRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  DeleteTaskPushNotificationConfigRequest,
  GetExtendedAgentCardRequest,
  AgentCard,
  'google.protobuf.Empty': EMPTY,
};

/** A request as the server decoded it: the SDK's message, its size on the wire, or why it could not be read. */
export type DecodedRequest = { message: unknown; bytes: number } | { undecodable: string; bytes: number };

/** One served method: the registry's operation with its converters. */
export interface GrpcMethod {
  operation: Operation;
  /** The method's full path, `/lf.a2a.v1.A2AService/<Method>`. */
  path: string;
  /** The decoded request in ProtoJSON (defaults omitted, as the SDK's clients send them). */
  requestJson(message: unknown): Record<string, unknown>;
  /** An operation's ProtoJSON result as the SDK message the method answers with. */
  response(json: unknown): unknown;
}

const lowerFirst = (name: string): string => `${name.charAt(0).toLowerCase()}${name.slice(1)}`;

function codecOf(typeName: string, operation: string): JsonCodec {
  const codec = JSON_CODECS[typeName];
  if (codec === undefined) throw new Error(`gRPC binding: ${operation} names the message ${typeName}, which has no ProtoJSON codec here`);
  return codec;
}

/**
 * The service definition and methods, keyed by handler name (`sendMessage`, …). Checked at
 * start: a registry mapping whose method or message types the SDK's A2AService lacks stops the
 * process, rather than serving something else.
 */
export function grpcServiceOf(registry: OperationRegistry): { definition: ServiceDefinition; methods: Map<string, GrpcMethod> } {
  const sdkMethods = A2AService as unknown as Record<string, MethodDefinition<unknown, unknown>>;
  const definition: Record<string, MethodDefinition<DecodedRequest, unknown>> = {};
  const methods = new Map<string, GrpcMethod>();
  for (const operation of registry.operations) {
    if (operation.grpc === undefined) continue;
    const handlerName = lowerFirst(operation.grpc.method);
    const sdk = sdkMethods[handlerName];
    const path = `/${GRPC_SERVICE_NAME}/${operation.grpc.method}`;
    if (sdk === undefined || sdk.path !== path) throw new Error(`gRPC binding: ${operation.name} maps to ${path}, which the SDK's A2AService does not define`);
    if (sdk.responseStream !== operation.streaming) throw new Error(`gRPC binding: ${operation.name} streams ${operation.streaming ? '' : 'not '}in the registry but not in a2a.proto`);
    const requestCodec = codecOf(operation.grpc.requestType, operation.name);
    const responseCodec = codecOf(operation.grpc.responseType, operation.name);
    definition[handlerName] = {
      ...sdk,
      // A request that does not decode is answered by the binding as INVALID_ARGUMENT (grpc-js
      // would say INTERNAL), after the caller's credentials were checked like any other.
      requestDeserialize: (buffer: Buffer): DecodedRequest => {
        try {
          return { message: sdk.requestDeserialize(buffer), bytes: buffer.length };
        } catch (error) {
          return { undecodable: (error as Error).message, bytes: buffer.length };
        }
      },
    };
    methods.set(handlerName, {
      operation,
      path,
      requestJson: (message) => requestCodec.toJSON(message as never) as Record<string, unknown>,
      response: (json) => responseCodec.fromJSON((json ?? {}) as never),
    });
  }
  return { definition: definition as ServiceDefinition, methods };
}
