// Push notifications through the official client over both bindings: config create/get/list/
// delete, and a webhook receiver that gets every event of a streamed task, in order, signed.
import { randomBytes } from 'node:crypto';
import {
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  ListTaskPushNotificationConfigsRequest,
  SendMessageRequest,
  TaskPushNotificationConfig,
  TaskState,
  type StreamResponse,
} from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory, type Client, type TransportFactory } from '@a2a-js/sdk/client';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.ts';

let gw: TestGateway;
let receiver: WebhookReceiver;
const HMAC_SECRET = `whsec_${randomBytes(24).toString('base64')}`;

beforeAll(async () => {
  gw = await startTestGateway({
    name: 'push',
    config: { push: { allowedHosts: ['127.0.0.1'], sweepIntervalMs: 200, retryInitialDelayMs: 100, retryMaxDelayMs: 400 } },
  });
  receiver = await startWebhookReceiver({ jwksUrl: `${gw.url}/.well-known/jwks.json`, hmacSecret: HMAC_SECRET });
});

afterAll(async () => {
  await receiver?.close();
  await gw?.close();
});

const BINDINGS: { name: string; factory: () => TransportFactory }[] = [
  { name: 'JSONRPC', factory: () => new JsonRpcTransportFactory() },
  { name: 'HTTP+JSON', factory: () => new RestTransportFactory() },
];

async function storedEvents(taskId: string): Promise<{ id: string; json: string }[]> {
  return (await gw.redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+')).map(([id, fields]) => ({ id, json: fields[1] ?? '' }));
}

const hookPath = (name: string): string => `/hooks/${name}-${randomBytes(4).toString('hex')}`;

describe.each(BINDINGS)('push notifications with the official client over $name', (binding) => {
  let client: Client;

  beforeAll(async () => {
    client = await new ClientFactory({ transports: [binding.factory()] }).createFromUrl(gw.url);
    expect(client.transport.protocolName).toBe(binding.name);
  });

  it('the card offers push notifications and the JWKS holds the Ed25519 webhook key', async () => {
    const card = await client.getAgentCard();
    expect(card.capabilities?.pushNotifications).toBe(true);
    const jwks = (await (await fetch(`${gw.url}/.well-known/jwks.json`)).json()) as { keys: { kty: string; crv?: string; d?: string }[] };
    expect(jwks.keys.some((k) => k.kty === 'OKP' && k.crv === 'Ed25519')).toBe(true);
    expect(jwks.keys.every((k) => k.d === undefined)).toBe(true);
  });

  it('a streamed task with a config on SendStreamingMessage: the receiver gets every event, in order, signed, once each [guarantee:push.at-least-once]', async () => {
    const path = hookPath('stream');
    const request = SendMessageRequest.fromJSON({
      message: textMessage('stream the quick brown fox jumps'),
      configuration: { taskPushNotificationConfig: { url: `${receiver.url}${path}`, authentication: { scheme: 'Bearer', credentials: 'receiver-secret' } } },
    });
    const streamed: StreamResponse[] = [];
    for await (const event of client.sendMessageStream(request)) streamed.push(event);
    const taskId = streamed[0]?.payload?.$case === 'task' ? streamed[0].payload.value.id : '';
    expect(taskId).not.toBe('');
    const stored = await storedEvents(taskId);
    // The stream closes on the terminal event, which is the last event stored.
    expect(stored.length).toBe(streamed.length);
    const got = await receiver.waitForAccepted(stored.length, path);
    expect(got.map((d) => d.body)).toEqual(stored.map((e) => e.json));
    for (const delivery of got) {
      expect(delivery.headers['content-type']).toBe('application/a2a+json');
      expect(delivery.headers.authorization).toBe('Bearer receiver-secret');
      expect(delivery.ed25519Valid).toBe(true);
      expect(delivery.hmacValid).toBe(false); // no whsec_ secret on this config: no v1 signature
    }
    const ids = got.map((d) => d.webhookId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(stored.map((e) => expect.stringMatching(new RegExp(`^${taskId}\\..+\\.${e.id}$`))));
    // Nothing more arrives for it (no duplicates once the chain is drained).
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.deliveries.filter((d) => d.path === path)).toHaveLength(stored.length);
    const last = got.at(-1)?.json as { statusUpdate?: { status?: { state?: string } } };
    expect(last.statusUpdate?.status?.state).toBe('TASK_STATE_COMPLETED');
  });

  it('create, get, list and delete a config; a config added later gets the events after it', async () => {
    const started = await client.sendMessage(SendMessageRequest.fromJSON({ message: textMessage('long 15'), configuration: { returnImmediately: true } }));
    const taskId = 'id' in started ? started.id : '';
    const path = hookPath('crud');
    const created = await client.createTaskPushNotificationConfig(
      TaskPushNotificationConfig.fromJSON({ taskId, id: 'cfg-a', url: `${receiver.url}${path}`, token: HMAC_SECRET }),
    );
    expect(created.id).toBe('cfg-a');
    expect(created.taskId).toBe(taskId);
    expect(created.url).toBe(`${receiver.url}${path}`);
    // The secret is write-only: no answer returns it, the creating one included.
    expect(created.token).toBe('whsec_********');
    const read = await client.getTaskPushNotificationConfig(GetTaskPushNotificationConfigRequest.fromJSON({ taskId, id: 'cfg-a' }));
    expect(read.url).toBe(created.url);
    expect(read.token).toBe('whsec_********');
    const generated = await client.createTaskPushNotificationConfig(
      TaskPushNotificationConfig.fromJSON({ taskId, url: `${receiver.url}${path}-2`, token: 'opaque-token', authentication: { scheme: 'Bearer', credentials: 'receiver-secret' } }),
    );
    expect(generated.id).not.toBe('');
    expect(generated.token).toBe('********');
    expect(generated.authentication).toMatchObject({ scheme: 'Bearer', credentials: '********' });
    const listed = await client.listTaskPushNotificationConfig(ListTaskPushNotificationConfigsRequest.fromJSON({ taskId }));
    expect(listed.configs.map((c) => c.id).sort()).toEqual(['cfg-a', generated.id].sort());
    expect(JSON.stringify(listed)).not.toContain(HMAC_SECRET);
    expect(JSON.stringify(listed)).not.toContain('receiver-secret');
    expect(JSON.stringify(listed)).not.toContain('opaque-token');

    await waitFor(async () => (await client.getTask({ id: taskId, tenant: '', historyLength: 0 })).status?.state === TaskState.TASK_STATE_COMPLETED, 15_000, 'the task to complete');
    // The whsec_ token signs (v1) and is never sent as a header; deliveries end with the terminal event.
    const got = await waitFor(async () => {
      const accepted = receiver.accepted(path).filter((d) => d.path === path);
      const last = accepted.at(-1)?.json as { statusUpdate?: { status?: { state?: string } } } | undefined;
      return last?.statusUpdate?.status?.state === 'TASK_STATE_COMPLETED' ? accepted : undefined;
    }, 15_000, 'the terminal event at the receiver');
    for (const delivery of got) {
      expect(delivery.hmacValid).toBe(true);
      expect(delivery.ed25519Valid).toBe(true);
      expect(delivery.headers['x-a2a-notification-token']).toBeUndefined();
    }
    const stored = await storedEvents(taskId);
    // Added after the task started: a suffix of its events, in order.
    expect(stored.map((e) => e.json).slice(stored.length - got.length)).toEqual(got.map((d) => d.body));
    expect(got.length).toBeLessThan(stored.length);

    await client.deleteTaskPushNotificationConfig(DeleteTaskPushNotificationConfigRequest.fromJSON({ taskId, id: 'cfg-a' }));
    await client.deleteTaskPushNotificationConfig(DeleteTaskPushNotificationConfigRequest.fromJSON({ taskId, id: 'cfg-a' })); // idempotent
    const after = await client.listTaskPushNotificationConfig(ListTaskPushNotificationConfigsRequest.fromJSON({ taskId }));
    expect(after.configs.map((c) => c.id)).toEqual([generated.id]);
    await expect(client.getTaskPushNotificationConfig(GetTaskPushNotificationConfigRequest.fromJSON({ taskId, id: 'cfg-a' }))).rejects.toBeInstanceOf(TaskNotFoundError);
  });

  it("another task's or an unknown task's configs are not found", async () => {
    await expect(client.listTaskPushNotificationConfig(ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: 'no-such-task' }))).rejects.toBeInstanceOf(TaskNotFoundError);
    await expect(
      client.createTaskPushNotificationConfig(TaskPushNotificationConfig.fromJSON({ taskId: 'no-such-task', url: `${receiver.url}/x` })),
    ).rejects.toBeInstanceOf(TaskNotFoundError);
  });
});

describe('push configs from 0.3 clients', () => {
  it.each([
    ['JSON-RPC message/send, configuration.pushNotificationConfig', 'jsonrpc'],
    ['HTTP+JSON /v1/message:send, configuration.pushNotification', 'rest'],
  ] as const)('%s: the receiver gets every event, with the 0.3 authentication as Authorization', async (_name, binding) => {
    const path = hookPath(`legacy-${binding}`);
    const config = { url: `${receiver.url}${path}`, authentication: { schemes: ['Bearer'], credentials: 'legacy-secret' } };
    const messageId = `legacy-${randomBytes(6).toString('hex')}`;
    const response =
      binding === 'jsonrpc'
        ? await fetch(gw.jsonRpcUrl, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({
              jsonrpc: '2.0',
              id: 1,
              method: 'message/send',
              params: { message: { kind: 'message', messageId, role: 'user', parts: [{ kind: 'text', text: 'long 3' }] }, configuration: { blocking: false, pushNotificationConfig: config } },
            }),
          })
        : await fetch(`${gw.restUrl}/v1/message:send`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ message: { messageId, role: 'ROLE_USER', content: [{ text: 'long 3' }] }, configuration: { blocking: false, pushNotification: config } }),
          });
    const body = (await response.json()) as { result?: { id: string }; task?: { id: string } };
    const taskId = (binding === 'jsonrpc' ? body.result?.id : body.task?.id) ?? '';
    expect(taskId, JSON.stringify(body)).not.toBe('');
    await waitFor(async () => ((await gw.redis.hget(`${gw.prefix}:{${taskId}}:task`, 'state')) === 'TASK_STATE_COMPLETED' ? true : undefined), 15_000, 'the task to complete');
    const stored = await storedEvents(taskId);
    const got = await receiver.waitForAccepted(stored.length, path);
    expect(got.map((d) => d.body)).toEqual(stored.map((e) => e.json));
    for (const delivery of got) {
      expect(delivery.headers.authorization).toBe('Bearer legacy-secret');
      expect(delivery.ed25519Valid).toBe(true);
    }
  });
});

describe('push config limits and validation (raw JSON-RPC)', () => {
  async function newTask(): Promise<string> {
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo hi') });
    return ((body.result as { task: { id: string } }).task).id;
  }

  it('at most push.maxConfigsPerTask configs per task; the refused one changes nothing', async () => {
    const taskId = await newTask();
    for (let i = 0; i < 32; i += 1) {
      const { body } = await rpc(gw.jsonRpcUrl, 'CreateTaskPushNotificationConfig', { taskId, id: `c${i}`, url: `${receiver.url}/limit/${i}` });
      expect(body.error).toBeUndefined();
    }
    const { body } = await rpc(gw.jsonRpcUrl, 'CreateTaskPushNotificationConfig', { taskId, id: 'c32', url: `${receiver.url}/limit/32` });
    expect((body.error as { code: number }).code).toBe(-31429);
    expect(JSON.stringify(body.error)).toContain('PUSH_CONFIG_LIMIT');
    // Replacing an existing one is still allowed.
    expect((await rpc(gw.jsonRpcUrl, 'CreateTaskPushNotificationConfig', { taskId, id: 'c0', url: `${receiver.url}/limit/0b` })).body.error).toBeUndefined();
    const listed = (await rpc(gw.jsonRpcUrl, 'ListTaskPushNotificationConfigs', { taskId })).body.result as { configs: { id: string; url: string }[] };
    expect(listed.configs).toHaveLength(32);
    expect(listed.configs.find((c) => c.id === 'c0')?.url).toBe(`${receiver.url}/limit/0b`);
  });

  it.each([
    ['a token with CR/LF', { token: 'abc\r\nX-Evil: 1' }, 'token'],
    ['credentials with LF', { authentication: { scheme: 'Bearer', credentials: 'a\nb' } }, 'authentication.credentials'],
    ['a scheme that is not a token', { authentication: { scheme: 'Bearer x', credentials: 'a' } }, 'authentication.scheme'],
    ['an id with a colon', { id: 'a:b' }, 'id'],
    ['a ftp URL', { url: 'ftp://127.0.0.1/hook' }, 'url'],
    ['credentials in the URL', { url: 'http://user:pw@127.0.0.1/hook' }, 'url'],
    ['a URL over push.maxUrlLength', { url: `http://127.0.0.1/${'a'.repeat(2100)}` }, 'url'],
  ])('refuses %s with -32602 naming the field, storing nothing', async (_what, override, field) => {
    const taskId = await newTask();
    const { body } = await rpc(gw.jsonRpcUrl, 'CreateTaskPushNotificationConfig', { taskId, url: `${receiver.url}/bad`, ...override });
    const error = body.error as { code: number; data: { fieldViolations?: { field: string }[] }[] };
    expect(error.code).toBe(-32602);
    expect(JSON.stringify(error)).toContain(`"field":"${field}"`);
    expect(await gw.redis.exists(`${gw.prefix}:{${taskId}}:push`)).toBe(0);
  });

  it('a config riding on a follow-up message gets every event from that message on, its SUBMITTED announcement included', async () => {
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('dialogue') });
    const task = (body.result as { task: { id: string; status: { state: string } } }).task;
    expect(task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const before = await storedEvents(task.id);
    const path = hookPath('follow-up');
    const answer = await rpc(gw.jsonRpcUrl, 'SendMessage', {
      message: textMessage('Ada', { taskId: task.id }),
      configuration: { taskPushNotificationConfig: { url: `${receiver.url}${path}` } },
    });
    expect((answer.body.result as { task: { status: { state: string } } }).task.status.state).toBe('TASK_STATE_COMPLETED');
    const after = (await storedEvents(task.id)).slice(before.length);
    expect(JSON.parse(after[0]?.json ?? '{}')).toMatchObject({ statusUpdate: { status: { state: 'TASK_STATE_SUBMITTED' } } });
    const got = await receiver.waitForAccepted(after.length, path);
    expect(got.map((d) => d.body)).toEqual(after.map((e) => e.json));
  });

  it('a refused config on SendMessage stores no task', async () => {
    const before = await gw.redis.keys(`${gw.prefix}:{*}:task`);
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', {
      message: textMessage('echo nope'),
      configuration: { taskPushNotificationConfig: { url: 'http://10.1.2.3/hook' } },
    });
    expect((body.error as { code: number }).code).toBe(-32602);
    expect(JSON.stringify(body.error)).toContain('configuration.taskPushNotificationConfig.url');
    expect((await gw.redis.keys(`${gw.prefix}:{*}:task`)).length).toBe(before.length);
  });
});
