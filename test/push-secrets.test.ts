// A push config's secrets are write-only: the token (a whsec_ signing secret or an opaque
// notification token) and the authentication credentials are never returned once stored — not
// by the Create that stored them, nor by Get and List, over JSON-RPC, HTTP+JSON and the 0.3
// layer, nor by an operator's inspection or a dead letter. A read shows a mask (whsec_******** for
// a signing secret); a mask sent back is refused rather than stored over the secret. Deliveries
// still carry the real secrets. (The official client's view is in push-delivery.test.ts.)
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatInspection, inspectTask } from '../src/cli/inspect.ts';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.ts';

const HMAC_SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const CREDENTIALS = `cred-${randomBytes(12).toString('hex')}`;
const OPAQUE_TOKEN = `tok-${randomBytes(12).toString('hex')}`;
const SECRETS = [HMAC_SECRET, CREDENTIALS, OPAQUE_TOKEN];

let gw: TestGateway;
let receiver: WebhookReceiver;

beforeAll(async () => {
  gw = await startTestGateway({ name: 'pushsecret', config: { push: { allowedHosts: ['127.0.0.1'], sweepIntervalMs: 200, retryHorizonMs: 1_000 } } });
  receiver = await startWebhookReceiver({ jwksUrl: `${gw.url}/.well-known/jwks.json`, hmacSecret: HMAC_SECRET });
});

afterAll(async () => {
  await receiver?.close();
  await gw?.close();
});

const expectNoSecret = (what: unknown): void => {
  const text = typeof what === 'string' ? what : JSON.stringify(what);
  for (const secret of SECRETS) expect(text).not.toContain(secret);
};

async function runningTask(): Promise<string> {
  const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('long 10'), configuration: { returnImmediately: true } });
  return (body.result as { task: { id: string } }).task.id;
}

const rest = async (method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> => {
  const response = await fetch(`${gw.restUrl}${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, text: await response.text() };
};

describe('push config secrets are write-only', () => {
  it('JSON-RPC: Create, Get and List show masks, never the secrets', async () => {
    const taskId = await runningTask();
    const url = `${receiver.url}/rpc/${taskId}`;
    const created = await rpc(gw.jsonRpcUrl, 'CreateTaskPushNotificationConfig', { taskId, id: 'signed', url, token: HMAC_SECRET });
    expect(created.body.result).toEqual({ id: 'signed', taskId, url, token: 'whsec_********' });
    const other = await rpc(gw.jsonRpcUrl, 'CreateTaskPushNotificationConfig', { taskId, id: 'auth', url, token: OPAQUE_TOKEN, authentication: { scheme: 'Bearer', credentials: CREDENTIALS } });
    expect(other.body.result).toEqual({ id: 'auth', taskId, url, token: '********', authentication: { scheme: 'Bearer', credentials: '********' } });
    const read = await rpc(gw.jsonRpcUrl, 'GetTaskPushNotificationConfig', { taskId, id: 'auth' });
    expect(read.body.result).toMatchObject({ token: '********', authentication: { scheme: 'Bearer', credentials: '********' } });
    const listed = await rpc(gw.jsonRpcUrl, 'ListTaskPushNotificationConfigs', { taskId });
    expect((listed.body.result as { configs: unknown[] }).configs).toHaveLength(2);
    for (const answer of [created, other, read, listed]) expectNoSecret(answer.body);
  });

  it('HTTP+JSON: Create, Get and List show masks, never the secrets', async () => {
    const taskId = await runningTask();
    const url = `${receiver.url}/rest/${taskId}`;
    const created = await rest('POST', `/tasks/${taskId}/pushNotificationConfigs`, { id: 'hook', url, token: HMAC_SECRET, authentication: { scheme: 'Bearer', credentials: CREDENTIALS } });
    expect(created.status).toBe(200);
    expect(JSON.parse(created.text)).toMatchObject({ token: 'whsec_********', authentication: { credentials: '********' } });
    const read = await rest('GET', `/tasks/${taskId}/pushNotificationConfigs/hook`);
    const listed = await rest('GET', `/tasks/${taskId}/pushNotificationConfigs`);
    expect(JSON.parse(read.text)).toMatchObject({ token: 'whsec_********' });
    for (const answer of [created, read, listed]) expectNoSecret(answer.text);
  });

  it('the 0.3 layer shows masks too', async () => {
    const taskId = await runningTask();
    const set = await fetch(gw.jsonRpcUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tasks/pushNotificationConfig/set',
        params: { taskId, pushNotificationConfig: { id: 'legacy', url: `${receiver.url}/legacy/${taskId}`, token: OPAQUE_TOKEN, authentication: { schemes: ['Bearer'], credentials: CREDENTIALS } } },
      }),
    });
    const text = await set.text();
    expect(JSON.parse(text)).toMatchObject({ result: { pushNotificationConfig: { token: '********', authentication: { credentials: '********' } } } });
    expectNoSecret(text);
  });

  it('a mask sent back is refused, and the stored secret stays', async () => {
    const taskId = await runningTask();
    const url = `${receiver.url}/mask/${taskId}`;
    await rpc(gw.jsonRpcUrl, 'CreateTaskPushNotificationConfig', { taskId, id: 'hook', url, token: HMAC_SECRET });
    const before = await gw.redis.hget(`${gw.prefix}:{${taskId}}:push`, 'hook');
    for (const [fields, field] of [
      [{ token: 'whsec_********' }, 'token'],
      [{ token: '********' }, 'token'],
      [{ authentication: { scheme: 'Bearer', credentials: '********' } }, 'authentication.credentials'],
    ] as const) {
      const reply = await rpc(gw.jsonRpcUrl, 'CreateTaskPushNotificationConfig', { taskId, id: 'hook', url, ...fields });
      const error = reply.body.error as { code: number };
      expect(error.code).toBe(-32602);
      expect(JSON.stringify(error)).toContain(`"field":"${field}"`);
      const viaRest = await rest('POST', `/tasks/${taskId}/pushNotificationConfigs`, { id: 'hook', url, ...fields });
      expect(viaRest.status).toBe(400);
    }
    expect(await gw.redis.hget(`${gw.prefix}:{${taskId}}:push`, 'hook')).toBe(before);
  });

  it('deliveries carry the real secrets; inspection and dead letters show none', async () => {
    const path = `/delivered/${randomBytes(4).toString('hex')}`;
    receiver.behave({ status: 400, pathPrefix: `${path}-dead` });
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', {
      message: textMessage('echo secrets'),
      configuration: { taskPushNotificationConfig: { url: `${receiver.url}${path}`, token: HMAC_SECRET, authentication: { scheme: 'Bearer', credentials: CREDENTIALS } } },
    });
    expectNoSecret(body);
    const taskId = (body.result as { task: { id: string } }).task.id;
    const got = await receiver.waitForAccepted(1, path);
    expect(got[0]?.headers.authorization).toBe(`Bearer ${CREDENTIALS}`);
    expect(got[0]?.hmacValid).toBe(true);
    // A config whose receiver refuses: its dead letter names the URL and the error, not the secrets.
    const running = await runningTask();
    await rpc(gw.jsonRpcUrl, 'CreateTaskPushNotificationConfig', { taskId: running, id: 'dead', url: `${receiver.url}${path}-dead`, token: OPAQUE_TOKEN, authentication: { scheme: 'Bearer', credentials: CREDENTIALS } });
    const letters = await waitFor(async () => {
      const listed = (await rpc(gw.jsonRpcUrl, 'ListPushDeadLetters', { taskId: running })).body;
      return (listed.result as { deadLetters: unknown[] }).deadLetters.length > 0 ? listed : undefined;
    }, 15_000, 'a dead letter');
    expectNoSecret(letters);
    for (const inspected of [taskId, running]) {
      const inspection = await inspectTask(gw.redis, gw.prefix, inspected);
      expect(inspection?.pushDeliveries.length).toBeGreaterThan(0);
      expectNoSecret(inspection);
      expectNoSecret(formatInspection(inspection as NonNullable<typeof inspection>));
    }
    receiver.reset();
  }, 30_000);
});
