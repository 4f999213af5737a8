// A role that fails to start half-way stops what it had started: a gateway whose HTTP or gRPC
// port is taken rejects with the port named, and leaves no Redis connection and no listener
// behind (its lifecycle unwinds them in reverse order), against a redis-server of its own.
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agents } from '../src/agents/agents.ts';
import { configSchema, type GatewayConfig } from '../src/config/schema.ts';
import { startGatewayRole } from '../src/gateway/server.ts';
import { createLogger } from '../src/logging/logger.ts';
import { ROOT, uniquePrefix, waitFor } from './support/harness.ts';
import { freePort, startOwnRedis, type OwnRedis } from './support/redis-server.ts';

let redis: OwnRedis;
let plain: Redis;
let taken: Server;
let takenPort: number;

beforeAll(async () => {
  redis = await startOwnRedis();
  plain = new Redis(redis.url);
  taken = createServer();
  takenPort = await new Promise<number>((resolve) => taken.listen(0, '127.0.0.1', () => resolve((taken.address() as { port: number }).port)));
}, 60_000);

afterAll(async () => {
  taken?.close();
  plain?.disconnect();
  await redis?.stop();
});

function configWith(settings: Record<string, unknown>): GatewayConfig {
  const prefix = uniquePrefix('start-failure');
  return configSchema.parse({
    auth: { enabled: false },
    cardSigning: false,
    dataDir: join(tmpdir(), `a2a-gateway-test-${prefix}`),
    redisUrl: redis.url,
    keyPrefix: prefix,
    host: '127.0.0.1',
    port: 0,
    logLevel: 'silent',
    ...settings,
  });
}

/** The gateway's connections still open on this Redis (its own are named a2a-gateway:<role>). */
async function gatewayConnections(): Promise<string[]> {
  const list = (await plain.client('LIST')) as string;
  return list.split('\n').filter((line) => / name=a2a-gateway:/.test(line));
}

describe('a gateway that fails to start', () => {
  it('on a taken HTTP port names it and closes every Redis connection it opened', async () => {
    const config = configWith({ port: takenPort, grpcPort: 'off' });
    await expect(startGatewayRole(config, await Agents.load(config, ROOT), createLogger('silent'), { baseDir: ROOT })).rejects.toThrow(`127.0.0.1:${takenPort} is already in use`);
    await waitFor(async () => ((await gatewayConnections()).length === 0 ? true : undefined), 5_000, 'the connections to close');
  });

  it('on a taken gRPC port names it, and releases the HTTP port it had bound and every Redis connection', async () => {
    const httpPort = await freePort();
    const config = configWith({ port: httpPort, grpcPort: takenPort });
    await expect(startGatewayRole(config, await Agents.load(config, ROOT), createLogger('silent'), { baseDir: ROOT })).rejects.toThrow('(grpcPort) is already in use');
    await waitFor(async () => ((await gatewayConnections()).length === 0 ? true : undefined), 5_000, 'the connections to close');
    const again = createServer();
    await new Promise<void>((resolve, reject) => {
      again.once('error', reject);
      again.listen(httpPort, '127.0.0.1', () => resolve());
    });
    again.close();
  });
});
