// examples/sdk-agent: an agent built with the official SDK, behind the gateway with the a2a
// adapter as examples/sdk-agent/gateway.yaml configures it, called through the gateway with the
// official client. The example agent runs as its own process, as a user would start it.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SendMessageRequest, TaskState, type Message, type Task } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { whenChildReady } from './support/child-ready.ts';
import { ROOT, startTestGateway, type TestGateway } from './support/harness.ts';

const EXAMPLE = join(ROOT, 'examples/sdk-agent');
let agent: ChildProcess;
let agentUrl: string;
let gw: TestGateway;

beforeAll(async () => {
  agent = spawn(process.execPath, [join(EXAMPLE, 'agent.mjs')], { cwd: ROOT, env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
  const ready = await whenChildReady(agent, { name: 'example SDK agent', ready: (output) => /Weather Desk listening on (\S+)/.exec(output)?.[1] });
  agentUrl = ready.value;
  // The example's own configuration, with the port this run's agent got.
  const config = parseYaml(readFileSync(join(EXAMPLE, 'gateway.yaml'), 'utf8')) as { agents: { weather: { adapter: string; adapterOptions: { url: string } } } };
  expect(config.agents.weather).toEqual({ adapter: 'a2a', adapterOptions: { url: 'http://127.0.0.1:4100' } });
  config.agents.weather.adapterOptions.url = agentUrl;
  gw = await startTestGateway({ name: 'examples-sdk-agent', config });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  if (agent !== undefined && agent.exitCode === null) {
    const exited = new Promise((resolve) => agent.once('exit', resolve));
    agent.kill('SIGTERM');
    await exited;
  }
});

describe('examples/sdk-agent behind the gateway', () => {
  it('answers through the gateway, to the official client, under its own name', async () => {
    const client = await new ClientFactory().createFromUrl(`${gw.url}/agents/weather/`);
    const card = await client.getAgentCard();
    expect(card.name).toBe('Weather Desk');
    expect(card.skills.map((s) => s.id)).toEqual(['forecast']);
    // The client talks to the gateway only.
    expect(card.supportedInterfaces.every((face) => face.url.startsWith(gw.url))).toBe(true);

    const answer = (await client.sendMessage(
      SendMessageRequest.fromJSON({ message: { messageId: `example-${Date.now()}`, role: 'ROLE_USER', parts: [{ text: 'weather Paris' }] } }),
    )) as Task | Message;
    expect('status' in answer).toBe(true);
    const task = answer as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const forecast = task.artifacts.find((a) => a.artifactId === 'forecast');
    expect(forecast?.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('')).toBe('Sunny in Paris, 21 °C.');
  });
});
