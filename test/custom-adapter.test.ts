// A user's own adapter module, loaded by path from configuration, serves real A2A calls:
// its skills are on the card and its turns run through the same fenced runtime.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ name: 'custom-adapter', config: { adapter: 'examples/echo-adapter.mjs', adapterOptions: { suffix: '!' } } });
});

afterAll(async () => {
  await gw?.close();
});

describe('an adapter module named in configuration', () => {
  it('publishes its skills on the agent card', async () => {
    const card = (await (await fetch(`${gw.url}/.well-known/agent-card.json`)).json()) as { skills: { id: string }[] };
    expect(card.skills.map((s) => s.id)).toEqual(['upper']);
  });

  it('answers messages, and its name and version are recorded on the turn', async () => {
    const reply = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('make me loud') });
    const task = (reply.body.result as { task: { id: string; status: { state: string }; artifacts: { parts: { text: string }[] }[] } }).task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts[0]?.parts[0]?.text).toBe('MAKE ME LOUD!');
    const record = JSON.parse((await gw.redis.hget(`${gw.prefix}:{${task.id}}:turns`, '1')) as string) as { adapter: string };
    expect(record.adapter).toBe('upper-echo@1.0.0');
  });
});
