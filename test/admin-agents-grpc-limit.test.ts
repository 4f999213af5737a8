// The gRPC port's largest message is fixed when the port opens (grpc-js takes it when the server
// is made). A gateway that starts takes the agents stored through the admin API into account: a
// stored agent's larger maxBodyBytes applies on gRPC from the next start, as docs/admin-api.md
// says, where before only the configured agents' limits counted.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SendMessageRequest } from '@a2a-js/sdk';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCall } from './support/admin-client.ts';
import { spawnGatewayProcess, type GatewayProcess } from './support/gateway-process.ts';
import { metadataOf, rawGrpc } from './support/grpc.ts';
import { deletePrefix, REDIS_URL, textMessage, uniquePrefix } from './support/harness.ts';

const LIMIT = 3 * 1024 * 1024;

describe("a stored agent's maxBodyBytes on the gRPC port", () => {
  const prefix = uniquePrefix('agents-grpc-limit');
  let dir: string;
  let env: Record<string, string>;
  const gateways: GatewayProcess[] = [];

  const grpcAddressOf = async (gateway: GatewayProcess): Promise<string> => {
    const card = (await (await fetch(`${gateway.url}/.well-known/agent-card.json`)).json()) as { supportedInterfaces: { protocolBinding: string; url: string }[] };
    const grpc = card.supportedInterfaces.find((entry) => entry.protocolBinding === 'GRPC');
    if (grpc === undefined) throw new Error('the card declares no gRPC interface');
    return grpc.url;
  };
  /** A 2 MiB message (over the configured 1 MiB, under the stored agent's 3 MiB) to the stored agent over gRPC. */
  const sendLarge = async (gateway: GatewayProcess): Promise<number> => {
    const client = rawGrpc(await grpcAddressOf(gateway));
    try {
      const request = SendMessageRequest.fromJSON({ tenant: 'agents/large', message: textMessage(`echo ${'x'.repeat(2 * 1024 * 1024)}`), configuration: { returnImmediately: true } });
      const { error } = await client.unary('sendMessage', request, metadataOf({ 'a2a-version': '1.0' }));
      return error?.code ?? GrpcStatus.OK;
    } finally {
      client.close();
    }
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'a2a-agents-grpc-limit-'));
    const configFile = join(dir, 'gateway.json');
    await writeFile(configFile, JSON.stringify({ cardSigning: false, dataDir: dir }));
    env = { A2A_CONFIG: configFile, A2A_GRPC_PORT: '0' };
    gateways.push(await spawnGatewayProcess(prefix, env));
  }, 60_000);

  afterAll(async () => {
    for (const gateway of gateways) gateway.kill('SIGTERM');
    await Promise.all(gateways.map((gateway) => gateway.exited));
    const redis = new Redis(REDIS_URL);
    await deletePrefix(redis, prefix);
    await redis.quit();
    await rm(dir, { recursive: true, force: true });
  });

  it('applies from the next start of a gateway', async () => {
    const [first] = gateways;
    const put = await adminCall(first!.url, 'PUT', '/agents/large', { body: { adapter: 'demo', limits: { maxBodyBytes: LIMIT } } });
    expect(put.status).toBe(201);
    // The port that opened before the agent existed keeps its bound (the configured 1 MiB).
    expect(await sendLarge(first!)).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    const next = await spawnGatewayProcess(prefix, env);
    gateways.push(next);
    expect(await sendLarge(next)).toBe(GrpcStatus.OK);
  }, 60_000);
});
