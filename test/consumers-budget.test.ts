// A consumer's model budgets, against a fake OpenAI-compatible server that reports usage: the
// tokens and spend of turns on both gateways add up to what the server reported; a reply that
// takes the consumer past modelTokensPerDay or spendPerMonth while it streams stops there (the
// model call is abandoned) and its task fails naming the plan and the budget; the next turn of
// a spent budget fails without calling the model.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCall } from './support/admin-client.ts';
import { jsonRpc, startConsumerCluster, type ConsumerCluster } from './support/consumer-cluster.ts';
import { startFakeOpenAIServer, type FakeOpenAIServer } from './support/fake-openai-server.ts';
import { textMessage, waitFor } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';

let issuer: TestIssuer;
let cluster: ConsumerCluster;
let fake: FakeOpenAIServer;
let platform: string;

const PRICES = { 'fake-model': { inputPerMillion: 2, outputPerMillion: 8 } };
const unique = (label: string): string => `${label}-${randomBytes(3).toString('hex')}`;

beforeAll(async () => {
  issuer = await createTestIssuer();
  fake = await startFakeOpenAIServer();
  cluster = await startConsumerCluster('consumers-budget', issuer.config, {
    default: { adapter: 'demo', adapterOptions: { stepMs: 20 } },
    chat: { adapter: 'openai', adapterOptions: { baseURL: fake.baseURL, model: 'fake-model', maxRetries: 0, askUser: false, prices: PRICES } },
  });
  platform = await issuer.token({ scope: 'a2a:admin a2a:platform', sub: 'root' });
}, 60_000);

afterAll(async () => {
  await cluster?.close();
  await fake?.close();
});

interface TaskView {
  id: string;
  status: { state: string; message?: { parts: { text?: string }[] } };
  artifacts?: { parts: { text?: string }[] }[];
}

/** Sends to the model agent and waits for the task to end. */
async function runTask(base: string, token: string, text: string): Promise<TaskView> {
  const sent = await jsonRpc(`${base}/agents/chat`, token, 'SendMessage', { message: textMessage(text), configuration: { returnImmediately: true } });
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  const { id } = (sent.body.result as { task: TaskView }).task;
  return waitFor(async () => {
    const read = await jsonRpc(`${base}/agents/chat`, token, 'GetTask', { id });
    const task = read.body.result as TaskView;
    return ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED'].includes(task.status.state) ? task : undefined;
  }, 30_000, `task ${id} to end`);
}

const reasonOf = (task: TaskView): string => (task.status.message?.parts ?? []).map((part) => part.text ?? '').join('');

interface Figures {
  requests: number;
  tasks: number;
  tokensIn: number;
  tokensOut: number;
  spend: number;
}

async function usageOf(name: string): Promise<{ today: Figures; month: Figures }> {
  const answer = await adminCall(cluster.a.url, 'GET', `/consumers/${name}/usage`, { token: platform });
  expect(answer.status).toBe(200);
  return answer.body as unknown as { today: Figures; month: Figures };
}

async function newConsumer(plan: Record<string, unknown>): Promise<{ name: string; token: string }> {
  const name = unique('c');
  const sub = unique('u');
  const put = await adminCall(cluster.b.url, 'PUT', `/consumers/${name}`, { token: platform, body: { members: { issuer: 'test', subjects: [sub] }, plan } });
  expect(put.status, JSON.stringify(put.body)).toBe(201);
  return { name, token: await issuer.token({ sub }) };
}

describe('model tokens and spend', () => {
  it('usage equals what the server reported, turns on both gateways together, priced per model', async () => {
    const { name, token } = await newConsumer({ name: 'metered' });
    const tasks = [await runTask(cluster.a.url, token, 'words=5 first'), await runTask(cluster.b.url, token, 'words=9 second')];
    let tokensIn = 0;
    let tokensOut = 0;
    for (const task of tasks) {
      expect(task.status.state).toBe('TASK_STATE_COMPLETED');
      const [input, output] = await cluster.redis.hmget(`${cluster.prefix}:{${task.id}}:task`, 'usageInputTokens', 'usageOutputTokens');
      tokensIn += Number(input);
      tokensOut += Number(output);
    }
    expect(tokensIn).toBeGreaterThan(0);
    expect(tokensOut).toBe(5 + 9);
    const usage = await usageOf(name);
    const spend = (tokensIn * 2 + tokensOut * 8) / 1_000_000;
    expect(usage.today).toMatchObject({ tasks: 2, tokensIn, tokensOut });
    expect(usage.month).toMatchObject({ tasks: 2, tokensIn, tokensOut });
    expect(usage.month.spend).toBeCloseTo(spend, 9);
  });

  it('modelTokensPerDay reached mid-stream: the turn stops at the limit and the task fails naming it; the next turn fails before calling the model', async () => {
    const { name, token } = await newConsumer({ name: 'capped', modelTokensPerDay: 40 });
    const marker = unique('long-reply');
    const task = await runTask(cluster.a.url, token, `words=400 slow=10 ${marker}`);
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(reasonOf(task)).toContain(`Consumer "${name}" reached the limit modelTokensPerDay 40 of its plan "capped"`);
    // The model call was abandoned, not read to its end.
    await fake.waitFor(() => fake.requestsFor(marker)[0]?.clientDisconnected === true, 10_000, 'the model call to be abandoned');
    const streamed = (task.artifacts ?? []).flatMap((artifact) => artifact.parts).map((part) => part.text ?? '').join('');
    expect(streamed.split(' ').filter((word) => word !== '').length).toBeLessThan(100);
    const usage = await usageOf(name);
    expect(usage.today.tokensIn + usage.today.tokensOut).toBeGreaterThan(40);
    expect(usage.today.tokensIn + usage.today.tokensOut).toBeLessThan(100);

    const next = unique('after-spent');
    const refused = await runTask(cluster.b.url, token, `words=3 ${next}`);
    expect(refused.status.state).toBe('TASK_STATE_FAILED');
    expect(reasonOf(refused)).toContain('modelTokensPerDay 40');
    expect(fake.requestsFor(next)).toHaveLength(0);
  });

  it('turns streaming at once through both gateways share one budget: each stops, the total passes it by at most a chunk each', async () => {
    const { name, token } = await newConsumer({ name: 'shared', modelTokensPerDay: 60 });
    const tasks = await Promise.all([cluster.a.url, cluster.b.url, cluster.a.url].map((base) => runTask(base, token, `words=400 slow=10 ${unique('shared')}`)));
    for (const task of tasks) {
      expect(task.status.state).toBe('TASK_STATE_FAILED');
      expect(reasonOf(task)).toContain('modelTokensPerDay 60');
    }
    const usage = await usageOf(name);
    const used = usage.today.tokensIn + usage.today.tokensOut;
    expect(used).toBeGreaterThan(60);
    // Each running turn may have one charge (one chunk's words) in flight when the limit is passed.
    expect(used).toBeLessThan(60 + 3 * 40);
  });

  it('spendPerMonth reached mid-stream: the task fails naming the spend budget', async () => {
    // 8 per million output tokens: 0.0002 is 25 output tokens' worth, well inside the reply.
    const { name, token } = await newConsumer({ name: 'thrifty', spendPerMonth: 0.0002 });
    const task = await runTask(cluster.b.url, token, `words=400 slow=10 ${unique('spend')}`);
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(reasonOf(task)).toContain(`Consumer "${name}" reached the limit spendPerMonth 0.0002 of its plan "thrifty"`);
    const usage = await usageOf(name);
    expect(usage.month.spend).toBeGreaterThan(0.0002);
    expect(usage.month.spend).toBeLessThan(0.001);
  });
});
