// A worker woken for one job starts it without first asking for another (queues/idle-fetch.ts,
// startWokenJobsAtOnce), and its next fetch is a blocking wait beside the turn. That wait must
// never leave a queued turn waiting for the idle interval (30 s): a burst, turns arriving while
// others run, and a trickle of single turns are all taken at once.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { IDLE_DRAIN_DELAY_SECONDS } from '../queues/idle-fetch.ts';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ name: 'woken-jobs' });
});

afterAll(async () => {
  await gw?.close();
});

const idleMs = IDLE_DRAIN_DELAY_SECONDS * 1000;

async function submit(text: string): Promise<string> {
  const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(text), configuration: { returnImmediately: true } });
  return (body.result as { task: { id: string } }).task.id;
}

async function state(taskId: string): Promise<string> {
  const { body } = await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId });
  return (body.result as { status: { state: string } }).status.state;
}

it('runs a burst of queued turns at once', async () => {
  const started = Date.now();
  const ids = await Promise.all(Array.from({ length: 60 }, (_, i) => submit(`echo burst ${i}`)));
  for (const id of ids) await waitFor(async () => ((await state(id)) === 'TASK_STATE_COMPLETED' ? true : undefined), idleMs / 2, `task ${id} completed`);
  expect(Date.now() - started).toBeLessThan(idleMs / 3);
});

it('takes turns that arrive while another runs, and single turns one after another', async () => {
  // A long turn holds a slot while echoes arrive one by one.
  const long = await submit('long 20');
  for (let i = 0; i < 15; i++) {
    const sent = Date.now();
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(`echo trickle ${i}`) });
    expect((body.result as { task: { status: { state: string } } }).task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(Date.now() - sent).toBeLessThan(idleMs / 6);
    await new Promise((resolve) => setTimeout(resolve, i % 3 === 0 ? 60 : 5));
  }
  await waitFor(async () => ((await state(long)) === 'TASK_STATE_COMPLETED' ? true : undefined), idleMs / 2, 'the long task completed');
});
