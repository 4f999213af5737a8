// The gateway role's gRPC port (grpcPort, unless "off"). It listens before the cards are built,
// since they name its port, and serves once the gateway is assembled. Draining ends its streams
// with UNAVAILABLE and the event id to resume from; stopping waits for that close.
import type { Lifecycle } from '../app/lifecycle.ts';
import type { Agents } from '../agents/agents.ts';
import type { GrpcStreams } from '../bindings/grpc/grpc-streams.ts';
import { grpcServiceOf } from '../bindings/grpc/messages.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { OPERATIONS } from '../operations/registry.ts';
import { listenGrpc, type GrpcListener } from './grpc-server.ts';
import type { GrpcTls } from './startup-checks.ts';

/**
 * `storedBodyLimits`: the maxBodyBytes of the agents written through the admin API when the port
 * opens. grpc-js fixes a server's largest message when it is made, so a stored agent given a
 * larger limit later gets it on gRPC from the gateway's next start (docs/admin-api.md).
 */
export async function openGrpcPort(
  lifecycle: Lifecycle,
  config: GatewayConfig,
  options: { agents: Agents; streams: GrpcStreams; tls: GrpcTls | undefined; storedBodyLimits?: readonly number[] },
): Promise<GrpcListener | undefined> {
  const port = config.grpcPort;
  if (port === 'off') return undefined;
  let listener: GrpcListener | undefined;
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => (closed ??= listener?.close() ?? Promise.resolve());
  await lifecycle.start({
    name: 'gRPC server',
    start: async () => {
      listener = await listenGrpc(
        {
          host: config.grpcHost ?? config.host,
          port,
          maxReceiveBytes: Math.max(...options.agents.list().map((agent) => agent.settings.limits.maxBodyBytes), ...(options.storedBodyLimits ?? [])),
          keepaliveMs: config.heartbeatMs,
          streams: options.streams,
          tls: options.tls,
        },
        grpcServiceOf(OPERATIONS).definition,
      );
    },
    drain: () => {
      close().catch(() => undefined);
    },
    stop: close,
  });
  return listener;
}
