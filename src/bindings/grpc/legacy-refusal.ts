// The A2A 0.3 proto's service (`a2a.v1.A2AService`) answered with VersionNotSupportedError: a
// 0.3 gRPC client learns which versions and bindings it can use instead of a bare
// UNIMPLEMENTED. The gateway serves 0.3 over JSON-RPC and HTTP+JSON (src/compat/v0_3) only; its
// cards declare no 0.3 GRPC interface, so only a client configured by hand comes here.
import { LegacyA2AService } from '@a2a-js/sdk/compat/v0_3/server/grpc';
import type { MethodDefinition, ServiceDefinition, UntypedHandleCall, UntypedServiceImplementation } from '@grpc/grpc-js';
import { A2AError } from '../../protocol/errors.ts';
import { LEGACY_PROTOCOL_VERSION, PROTOCOL_VERSION } from '../../protocol/version.ts';
import { GRPC_SERVICE_NAME } from './messages.ts';
import { grpcStatusOf } from './status.ts';

export function legacyRefusalService(): { definition: ServiceDefinition; implementation: UntypedServiceImplementation } {
  const definition: Record<string, MethodDefinition<Buffer, unknown>> = {};
  const implementation: UntypedServiceImplementation = {};
  for (const [name, method] of Object.entries(LegacyA2AService as unknown as Record<string, MethodDefinition<unknown, unknown>>)) {
    // The request is never read: it is refused for its service, whatever it holds.
    definition[name] = { ...method, requestDeserialize: (bytes: Buffer) => bytes };
    const refusal = (): ReturnType<typeof grpcStatusOf> =>
      grpcStatusOf(
        new A2AError(
          'VERSION_NOT_SUPPORTED',
          `${method.path} is A2A ${LEGACY_PROTOCOL_VERSION} over gRPC, which this gateway does not serve. Use A2A ${PROTOCOL_VERSION} over gRPC (${GRPC_SERVICE_NAME}, metadata "a2a-version: ${PROTOCOL_VERSION}"), or A2A ${LEGACY_PROTOCOL_VERSION} over JSON-RPC or HTTP+JSON (see the agent card).`,
          { metadata: { requestedVersion: LEGACY_PROTOCOL_VERSION, supportedVersions: PROTOCOL_VERSION, binding: 'GRPC' } },
        ),
      );
    implementation[name] = (method.responseStream
      ? (call: { emit(event: 'error', error: unknown): boolean }) => call.emit('error', refusal())
      : (_call: unknown, callback: (error: unknown) => void) => callback(refusal())) as UntypedHandleCall;
  }
  return { definition: definition as ServiceDefinition, implementation };
}
