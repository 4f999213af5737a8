// Fields of a request A2A 1.0 does not define: logged (one WARN line with the field paths, the
// method, and the 1.0 name of a known 0.3 field or the closest field of a typo) and ignored; with
// protocol.strictRequestFields refused with InvalidParams (-32602 / 400 INVALID_ARGUMENT) naming
// them, changing nothing. 0.3 requests, read by the 0.3 layer, are never refused for 0.3 names,
// and the official 1.0 client sends nothing unknown.
import { SendMessageRequest, type Message, type Task } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Logger, LogFields } from '../src/logging/logger.ts';
import { expectUnchanged, rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';

const warnings: { message: string; fields: LogFields }[] = [];
const capture: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: (message, fields) => warnings.push({ message, fields: fields ?? {} }),
  error: () => undefined,
};

let lenient: TestGateway;
let strict: TestGateway;

beforeAll(async () => {
  lenient = await startTestGateway({ name: 'fields-lenient', logger: capture });
  strict = await startTestGateway({ name: 'fields-strict', config: { protocol: { strictRequestFields: true } } });
}, 60_000);

afterAll(async () => {
  await lenient?.close();
  await strict?.close();
});

/** A 1.0 SendMessage as a 0.3 client half-migrated would send it: a 0.3 push field, 0.3 kinds, a typo. */
function mixedRequest(): Record<string, unknown> {
  return {
    message: { ...textMessage('echo mixed'), parts: [{ kind: 'text', text: 'echo mixed' }] },
    configuration: { pushNotificationConfig: { url: 'https://hooks.example.com/a2a' }, historyLenght: 1, returnImmediately: true },
  };
}

describe('unknown request fields', () => {
  it('are logged once per request with their paths, the method and what to send instead, and ignored', async () => {
    warnings.length = 0;
    const { body } = await rpc(lenient.jsonRpcUrl, 'SendMessage', mixedRequest());
    expect(body.error).toBeUndefined();
    const lines = warnings.filter((w) => w.message.includes('A2A 1.0 does not define'));
    expect(lines).toHaveLength(1);
    expect(lines[0]?.fields).toEqual({
      agent: 'default',
      method: 'SendMessage',
      fields: ['message.parts[0].kind', 'configuration.pushNotificationConfig', 'configuration.historyLenght'],
      useInstead: {
        'message.parts[0].kind': expect.stringMatching(/^nothing: a 1\.0 part is told apart/),
        'configuration.pushNotificationConfig': 'configuration.taskPushNotificationConfig',
        'configuration.historyLenght': 'configuration.historyLength',
      },
    });
    // The HTTP+JSON binding: a typo in the query of GetTask.
    const taskId = ((body.result as { task: Task }).task).id;
    warnings.length = 0;
    const response = await fetch(`${lenient.restUrl}/tasks/${taskId}?histroyLength=1`, { headers: { 'A2A-Version': '1.0' } });
    expect(response.status).toBe(200);
    expect(warnings.map((w) => w.fields)).toEqual([{ agent: 'default', method: 'GetTask', fields: ['histroyLength'], useInstead: { histroyLength: 'historyLength' } }]);
    // A request without unknown fields logs nothing.
    warnings.length = 0;
    expect((await rpc(lenient.jsonRpcUrl, 'GetTask', { id: taskId })).body.error).toBeUndefined();
    expect(warnings).toEqual([]);
  });

  it('are refused with InvalidParams naming each field and the 1.0 name to use when protocol.strictRequestFields is on, changing nothing', async () => {
    const { body } = await expectUnchanged(strict, () => rpc(strict.jsonRpcUrl, 'SendMessage', mixedRequest()));
    const error = body.error as { code: number; data: { fieldViolations?: { field: string; description: string }[] }[] };
    expect(error.code).toBe(-32602);
    const violations = error.data.flatMap((d) => d.fieldViolations ?? []);
    expect(violations.map((v) => v.field)).toEqual(['message.parts[0].kind', 'configuration.pushNotificationConfig', 'configuration.historyLenght']);
    expect(violations[1]?.description).toContain('use configuration.taskPushNotificationConfig');
    expect(violations[1]?.description).toContain('protocol.strictRequestFields');

    const rest = await expectUnchanged(strict, () =>
      fetch(`${strict.restUrl}/message:send`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' }, body: JSON.stringify(mixedRequest()) }),
    );
    expect(rest.status).toBe(400);
    const restBody = (await rest.json()) as { error: { status: string; details: { fieldViolations?: { field: string }[] }[] } };
    expect(restBody.error.status).toBe('INVALID_ARGUMENT');
    expect(restBody.error.details.flatMap((d) => d.fieldViolations ?? []).map((v) => v.field)).toContain('configuration.pushNotificationConfig');
  });

  it('strict, still serves clean 1.0 requests, the official client, and 0.3 clients through the 0.3 layer', async () => {
    const clean = await rpc(strict.jsonRpcUrl, 'SendMessage', { message: textMessage('echo clean'), configuration: { returnImmediately: true } });
    expect(clean.body.error).toBeUndefined();

    const client = await new ClientFactory().createFromUrl(strict.url);
    const answered = await client.sendMessage(SendMessageRequest.fromJSON({ message: { messageId: `sdk-${Date.now()}`, role: 'ROLE_USER', parts: [{ text: 'echo sdk' }] } }));
    expect('status' in (answered as Task | Message)).toBe(true);

    // 0.3 JSON-RPC (no A2A-Version): kinds, blocking and a 0.3 part are the 0.3 wire form, not unknown fields.
    const legacy = await rpc(
      strict.jsonRpcUrl,
      'message/send',
      { message: { kind: 'message', messageId: `v03-${Date.now()}`, role: 'user', parts: [{ kind: 'text', text: 'echo old' }] }, configuration: { blocking: true, acceptedOutputModes: ['text/plain'] } },
      { 'A2A-Version': '' },
    );
    expect(legacy.body.error).toBeUndefined();
    expect((legacy.body.result as { kind: string }).kind).toBe('task');
  });
});
