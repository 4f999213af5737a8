// The gRPC listener of the gateway role (grpcPort): an HTTP/2 server from @grpc/grpc-js that
// serves the A2AService (src/bindings/grpc). It binds before the cards are built, since they
// name its port; calls that arrive before the service is ready are told to retry, like HTTP
// requests in that window. At shutdown it ends every open stream with a resume hint, lets
// calls in flight finish for a moment, then cuts the rest.
import { Server, ServerCredentials, status as GrpcStatus, type ServiceDefinition, type UntypedHandleCall, type UntypedServiceImplementation } from '@grpc/grpc-js';
import type { GrpcStreams } from '../bindings/grpc/grpc-streams.ts';
import { legacyRefusalService } from '../bindings/grpc/legacy-refusal.ts';
import { grpcStatus } from '../bindings/grpc/status.ts';

export interface GrpcListenOptions {
  host: string;
  port: number;
  /** The largest request message any agent accepts (each agent's own limit is checked per call). */
  maxReceiveBytes: number;
  /** HTTP/2 pings on idle connections (heartbeatMs): what SSE comments are to an idle stream. */
  keepaliveMs: number;
  streams: GrpcStreams;
  /** PEM certificate chain and key: TLS instead of plaintext HTTP/2. */
  tls?: { certChain: Buffer; privateKey: Buffer };
}

export interface GrpcListener {
  port: number;
  /** Starts answering calls with the service's handlers. */
  serve(service: { definition: ServiceDefinition; implementation: UntypedServiceImplementation }): void;
  close(): Promise<void>;
}

/** How long calls in flight (blocking SendMessage) may take to finish at shutdown before they are cut. */
const SHUTDOWN_GRACE_MS = 2_000;

export async function listenGrpc(options: GrpcListenOptions, definition: ServiceDefinition): Promise<GrpcListener> {
  const server = new Server({
    'grpc.max_receive_message_length': options.maxReceiveBytes,
    'grpc.keepalive_time_ms': options.keepaliveMs,
    'grpc.keepalive_timeout_ms': Math.max(options.keepaliveMs, 10_000),
  });
  let implementation: UntypedServiceImplementation | undefined;
  const notReady = grpcStatus(GrpcStatus.UNAVAILABLE, 'The gateway is starting; retry shortly.');
  const deferred: UntypedServiceImplementation = {};
  for (const [name, method] of Object.entries(definition)) {
    deferred[name] = ((call: { emit(event: 'error', error: unknown): boolean }, callback?: (error: unknown) => void) => {
      const handler = implementation?.[name] as ((...args: unknown[]) => void) | undefined;
      if (handler !== undefined) return handler(call, callback);
      if (method.responseStream) call.emit('error', notReady);
      else callback?.(notReady);
    }) as UntypedHandleCall;
  }
  server.addService(definition, deferred);
  const legacy = legacyRefusalService();
  server.addService(legacy.definition, legacy.implementation);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${options.host.includes(':') ? `[${options.host}]` : options.host}:${options.port}`, credentialsOf(options.tls), (error, bound) => {
      if (error !== null) {
        const inUse = /EADDRINUSE|address already in use/i.test(error.message);
        reject(new Error(inUse ? `${options.host}:${options.port} (grpcPort) is already in use; stop what listens there, or set A2A_GRPC_PORT to a free port or "off".` : `the gRPC binding could not listen on ${options.host}:${options.port}: ${error.message}`));
        return;
      }
      resolve(bound);
    });
  });
  return {
    port,
    serve(service) {
      implementation = service.implementation;
    },
    async close() {
      options.streams.endAll();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, SHUTDOWN_GRACE_MS);
        timer.unref();
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}

function credentialsOf(tls: GrpcListenOptions['tls']): ServerCredentials {
  if (tls === undefined) return ServerCredentials.createInsecure();
  return ServerCredentials.createSsl(null, [{ cert_chain: tls.certChain, private_key: tls.privateKey }], false);
}
