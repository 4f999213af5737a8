// `a2a-gateway healthcheck`, the image's HEALTHCHECK: ready only when /readyz answers 200; the
// gateway's port is asked first, a worker's health port when nothing listens on the first.
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkHealth, readinessUrls } from '../src/cli/healthcheck.ts';
import { nodeEntryArgs } from './support/compiled-sources.ts';
import { ROOT } from './support/harness.ts';
import { freePort } from './support/redis-server.ts';

const run = promisify(execFile);
const servers: Server[] = [];

async function readyzAnswering(status: number): Promise<number> {
  const server = createServer((_request, response) => {
    response.writeHead(status, { 'Content-Type': 'application/json' });
    response.end(status === 200 ? '{"status":"ready"}' : '{"status":"draining"}');
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

let ready: number;
let draining: number;
let nothing: number;
beforeAll(async () => {
  ready = await readyzAnswering(200);
  draining = await readyzAnswering(503);
  nothing = await freePort();
});
afterAll(() => {
  for (const server of servers) server.close();
});

describe('the health check', () => {
  it('asks the gateway port, then the health port, on loopback when bound to every address', () => {
    expect(readinessUrls({ host: '0.0.0.0', port: 8080, healthPort: 8081 })).toEqual(['http://127.0.0.1:8080/readyz', 'http://127.0.0.1:8081/readyz']);
    expect(readinessUrls({ host: '10.1.2.3', port: 8080, healthPort: undefined })).toEqual(['http://10.1.2.3:8080/readyz']);
    expect(readinessUrls({ host: '::1', port: 8080, healthPort: undefined })).toEqual(['http://[::1]:8080/readyz']);
  });

  it('is ready on a 200, and not ready on a 503 even when another port would answer 200', async () => {
    expect(await checkHealth([`http://127.0.0.1:${ready}/readyz`])).toEqual({ ready: true, url: `http://127.0.0.1:${ready}/readyz` });
    const verdict = await checkHealth([`http://127.0.0.1:${draining}/readyz`, `http://127.0.0.1:${ready}/readyz`]);
    expect(verdict).toEqual({ ready: false, reason: `http://127.0.0.1:${draining}/readyz answered 503: {"status":"draining"}` });
  });

  it('falls through to the health port when nothing listens on the gateway port, and says so when nothing listens at all', async () => {
    expect((await checkHealth([`http://127.0.0.1:${nothing}/readyz`, `http://127.0.0.1:${ready}/readyz`])).ready).toBe(true);
    const verdict = await checkHealth([`http://127.0.0.1:${nothing}/readyz`]);
    expect(verdict.ready).toBe(false);
    expect(verdict.ready === false && verdict.reason).toContain('a worker needs A2A_HEALTH_PORT');
  });

  it('exits 0 when ready and 1 with the reason when not, reading the ports from the configuration', async () => {
    const command = (env: Record<string, string>) =>
      run(process.execPath, [...nodeEntryArgs('src/cli/main.ts'), 'healthcheck'], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 30_000 });
    await expect(command({ A2A_PORT: String(nothing), A2A_HEALTH_PORT: String(ready) })).resolves.toMatchObject({ stdout: `ready (http://127.0.0.1:${ready}/readyz)\n` });
    const failed = await command({ A2A_PORT: String(draining) }).catch((error: { code: number; stderr: string }) => error);
    expect(failed).toMatchObject({ code: 1 });
    expect((failed as { stderr: string }).stderr).toContain('not ready: ');
  });
});
