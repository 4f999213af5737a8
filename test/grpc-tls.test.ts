// The gRPC binding with TLS (grpcTlsCertFile / grpcTlsKeyFile): the SDK's gRPC client with the
// certificate's CA as its channel credentials talks to it; a plaintext client cannot; a
// certificate without its key stops the start with a message naming both settings.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetTaskRequest, SendMessageRequest, type Task } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { credentials } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agents } from '../src/agents/agents.ts';
import { startGatewayRole } from '../src/gateway/server.ts';
import { createLogger } from '../src/logging/logger.ts';
import { ROOT, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';
import { rawGrpc } from './support/grpc.ts';
import { freePort } from './support/redis-server.ts';

let gw: TestGateway;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'a2a-grpc-tls-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
  // The card names the host by name: TLS clients send it as the server name, and Node 26 refuses
  // an IP address there.
  const grpcPort = await freePort();
  gw = await startTestGateway({
    name: 'grpc-tls',
    config: { grpcPort, grpcPublicAddress: `localhost:${grpcPort}`, grpcTlsCertFile: join(dir, 'cert.pem'), grpcTlsKeyFile: join(dir, 'key.pem') },
  });
});

afterAll(async () => {
  await gw?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('gRPC over TLS', () => {
  it("serves the SDK's client that trusts the certificate, and not a plaintext one", async () => {
    const tls = credentials.createSsl(readFileSync(join(dir, 'cert.pem')));
    const factory = new ClientFactory({ transports: [new GrpcTransportFactory({ grpcChannelCredentials: tls })], cardResolver: new DefaultAgentCardResolver() });
    const client = await factory.createFromUrl(`${gw.url}/.well-known/agent-card.json`, '');
    const task = (await client.sendMessage(SendMessageRequest.fromJSON({ message: textMessage('echo over tls') }))) as Task;
    expect((await client.getTask(GetTaskRequest.fromJSON({ id: task.id }))).id).toBe(task.id);
    const plain = rawGrpc(gw.gateway.grpc?.address as string);
    try {
      const { error } = await plain.unary('getTask', GetTaskRequest.fromJSON({ id: task.id }));
      expect(error?.code).toBe(14);
    } finally {
      plain.close();
    }
  });

  it('a certificate without its key stops the start, naming both settings', async () => {
    // Refused before anything connects: nothing to clean up.
    const config = { ...gw.config, grpcPort: 0 as const, grpcTlsKeyFile: undefined };
    await expect(startGatewayRole(config, await Agents.load(config, ROOT), createLogger('silent'), { baseDir: ROOT })).rejects.toThrow(/grpcTlsCertFile and grpcTlsKeyFile/);
  });
});
