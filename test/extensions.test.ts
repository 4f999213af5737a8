// Extensions (spec 4.6): each agent's card declares the gateway's extensions and its adapter's;
// A2A-Extensions activates the declared ones a request names (the response says which), a
// required extension the client did not name refuses its messages with ExtensionSupportRequired
// (nothing stored), calling an extension's method uses it, and the adapter sees what was active.
import { DELIVERY_GUARANTEES_URI } from '../src/extensions/delivery-guarantees.ts';
import { VERIFICATION_EXTENSION_URI } from '../src/extensions/verification.ts';
import { TASK_GENERATIONS_URI } from '../src/extensions/task-generations.ts';
import { SUBSCRIPTIONS_EXTENSION_URI } from '../src/extensions/subscriptions.ts';
import { randomBytes } from 'node:crypto';
import { SendMessageRequest, type Message } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory, ServiceParameters, withA2AExtensions } from '@a2a-js/sdk/client';
import { ExtensionSupportRequiredError } from '@a2a-js/sdk/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASSIGNMENTS_EXTENSION_URI } from '../src/extensions/assignments.ts';
import { SCHEDULES_EXTENSION_URI } from '../src/extensions/schedules.ts';
import { expectUnchanged, rpc, startTestGateway, textMessage, turnJobsSettled, type TestGateway } from './support/harness.ts';

const GEO = 'urn:example:geo:v1';
const REQUIRED = 'urn:example:terms:v1';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({
    name: 'extensions',
    config: {
      agents: {
        demo: { adapter: 'demo', adapterOptions: { stepMs: 20 } },
        geo: {
          adapter: 'test/fixtures/direct-reply-adapter.mjs',
          adapterOptions: { extensions: [{ uri: GEO, description: 'Locations in metadata' }] },
        },
        strict: {
          adapter: 'test/fixtures/direct-reply-adapter.mjs',
          adapterOptions: { extensions: [{ uri: GEO }, { uri: REQUIRED, description: 'Terms every request accepts', required: true }] },
        },
      },
    },
  });
});

afterAll(async () => {
  await gw?.close();
});

const agentUrl = (agent: string): string => `${gw.url}/agents/${agent}`;
const headers = (extra: Record<string, string> = {}): Record<string, string> => ({ 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...extra });

async function cardOf(agent: string): Promise<{ capabilities: { extensions?: { uri: string; required?: boolean; description?: string }[] } }> {
  const response = await fetch(`${agentUrl(agent)}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } });
  return (await response.json()) as { capabilities: { extensions?: { uri: string; required?: boolean }[] } };
}

describe('the cards', () => {
  it("declare the gateway's extensions on every agent, and each agent's adapter extensions on its own card", async () => {
    expect((await cardOf('demo')).capabilities.extensions?.map((e) => e.uri)).toEqual([ASSIGNMENTS_EXTENSION_URI, SCHEDULES_EXTENSION_URI, SUBSCRIPTIONS_EXTENSION_URI, VERIFICATION_EXTENSION_URI, TASK_GENERATIONS_URI, DELIVERY_GUARANTEES_URI]);
    expect((await cardOf('geo')).capabilities.extensions?.map((e) => e.uri)).toEqual([ASSIGNMENTS_EXTENSION_URI, SCHEDULES_EXTENSION_URI, SUBSCRIPTIONS_EXTENSION_URI, VERIFICATION_EXTENSION_URI, TASK_GENERATIONS_URI, DELIVERY_GUARANTEES_URI, GEO]);
    const strict = (await cardOf('strict')).capabilities.extensions;
    expect(strict?.find((e) => e.uri === REQUIRED)).toMatchObject({ required: true, description: 'Terms every request accepts' });
    // Not required: left out, as the proto3 JSON form leaves a false boolean out (and so does the signed form).
    expect(strict?.find((e) => e.uri === ASSIGNMENTS_EXTENSION_URI)).not.toHaveProperty('required');
  });
});

describe('activation', () => {
  it('activates the declared extensions a request names, echoes them, and the adapter sees them (ctx.extensions)', async () => {
    const response = await fetch(`${agentUrl('geo')}/a2a/jsonrpc`, {
      method: 'POST',
      headers: headers({ 'A2A-Extensions': `urn:unknown:thing:v1, ${GEO}` }),
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: textMessage('extensions') } }),
    });
    expect(response.headers.get('a2a-extensions')).toBe(GEO);
    const body = (await response.json()) as { result: { message: { parts: { text: string }[] } } };
    expect(JSON.parse(body.result.message.parts[0]?.text ?? '')).toEqual([GEO]);
  });

  it('accepts the 0.3 header spelling (X-A2A-Extensions) too; a request naming none activates none', async () => {
    const legacy = await fetch(`${agentUrl('geo')}/a2a/rest/message:send`, {
      method: 'POST',
      headers: headers({ 'X-A2A-Extensions': GEO }),
      body: JSON.stringify({ message: textMessage('extensions') }),
    });
    expect(legacy.headers.get('a2a-extensions')).toBe(GEO);
    const none = await fetch(`${agentUrl('geo')}/a2a/rest/message:send`, { method: 'POST', headers: headers(), body: JSON.stringify({ message: textMessage('extensions') }) });
    expect(none.headers.get('a2a-extensions')).toBeNull();
    expect(((await none.json()) as { message: { parts: { text: string }[] } }).message.parts[0]?.text).toBe('[]');
  });

  it("calling an extension's method uses that extension: ListTaskAssignments answers with it activated", async () => {
    const task = (await rpc(`${agentUrl('demo')}/a2a/jsonrpc`, 'SendMessage', { message: textMessage('echo x') })).body.result as { task: { id: string } };
    const response = await fetch(`${agentUrl('demo')}/a2a/rest/tasks/${task.task.id}/assignments`, { headers: headers() });
    expect(response.status).toBe(200);
    expect(response.headers.get('a2a-extensions')).toBe(ASSIGNMENTS_EXTENSION_URI);
  });

  it('a required extension the client does not name: SendMessage is refused with ExtensionSupportRequired on both bindings, nothing stored', async () => {
    await turnJobsSettled(gw);
    const viaRpc = await expectUnchanged(gw, () => rpc(`${agentUrl('strict')}/a2a/jsonrpc`, 'SendMessage', { message: textMessage('reply hi') }, { 'A2A-Extensions': GEO }));
    const error = viaRpc.body.error as { code: number; message: string; data: { reason?: string; metadata?: Record<string, string> }[] };
    expect(error.code).toBe(-32008);
    expect(error.message).toContain(REQUIRED);
    expect(error.data[0]).toMatchObject({ reason: 'EXTENSION_SUPPORT_REQUIRED', metadata: { requiredExtensions: REQUIRED } });
    const viaRest = await expectUnchanged(gw, () =>
      fetch(`${agentUrl('strict')}/a2a/rest/message:stream`, { method: 'POST', headers: headers(), body: JSON.stringify({ message: textMessage('reply hi') }) }),
    );
    expect(viaRest.status).toBe(400);
    expect(((await viaRest.json()) as { error: { status: string } }).error.status).toBe('FAILED_PRECONDITION');
    // Reading is not sending: GetTask and ListTasks need no extension.
    const listed = await rpc(`${agentUrl('strict')}/a2a/jsonrpc`, 'ListTasks', {});
    expect(listed.body.error).toBeUndefined();
  });

  it('with the required extension named, the message goes through, and the official client can name it (withA2AExtensions)', async () => {
    const named = await rpc(`${agentUrl('strict')}/a2a/jsonrpc`, 'SendMessage', { message: textMessage('extensions') }, { 'A2A-Extensions': `${REQUIRED},${GEO}` });
    expect(JSON.parse((named.body.result as { message: { parts: { text: string }[] } }).message.parts[0]?.text ?? '')).toEqual([GEO, REQUIRED]);
    for (const transport of [new JsonRpcTransportFactory(), new RestTransportFactory()]) {
      const client = await new ClientFactory({ transports: [transport] }).createFromUrl(`${agentUrl('strict')}/.well-known/agent-card.json`, '');
      const request = SendMessageRequest.fromJSON({ message: { messageId: `x-${randomBytes(6).toString('hex')}`, role: 'ROLE_USER', parts: [{ text: 'extensions' }] } });
      await expect(client.sendMessage(request)).rejects.toBeInstanceOf(ExtensionSupportRequiredError);
      const reply = (await client.sendMessage(request, { serviceParameters: ServiceParameters.create(withA2AExtensions(REQUIRED)) })) as Message;
      const text = reply.parts[0]?.content?.$case === 'text' ? reply.parts[0].content.value : '';
      expect(JSON.parse(text)).toEqual([REQUIRED]);
    }
  });
});

describe('declarations', () => {
  it('an adapter extension without a usable URI, or declared twice, stops the start naming it', async () => {
    await expect(
      startTestGateway({ name: 'ext-bad', inProcessWorker: false, config: { adapter: 'test/fixtures/direct-reply-adapter.mjs', adapterOptions: { extensions: [{ uri: 'not a uri' }] } } }),
    ).rejects.toThrow(/extensions\[0\] needs a uri/);
    await expect(
      startTestGateway({ name: 'ext-twice', inProcessWorker: false, config: { adapter: 'test/fixtures/direct-reply-adapter.mjs', adapterOptions: { extensions: [{ uri: GEO }, { uri: GEO }] } } }),
    ).rejects.toThrow(/declared twice/);
  });
});
