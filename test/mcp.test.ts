// The MCP face, end to end with the official MCP client SDK: each agent the caller may use is a
// tool; a tool call is an A2A task (the same task the A2A bindings read); progress arrives as
// MCP progress notifications; a call made as an MCP task outlives its connection; /mcp is an
// OAuth protected resource whose 401 names its metadata.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createLogger } from '../src/logging/logger.ts';
import { LIMITS_OFF, rpc, startTestGateway, waitFor, type TestGateway } from './support/harness.ts';
import { captureLogLines } from './support/log-capture.ts';
import { createTestIssuer, TEST_ISSUER, type TestIssuer } from './support/identity.ts';
import { parseScrape, type Scrape } from './support/prometheus-text.ts';
import { adminCall } from './support/admin-client.ts';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.ts';

let gw: TestGateway;
let issuer: TestIssuer;
let token: string;
let secretToken: string;
let receiver: WebhookReceiver;

const AGENTS = {
  demo: { adapter: 'demo', adapterOptions: { stepMs: 20 }, card: { name: 'Demo', description: 'The demo agent.' } },
  secret: { adapter: 'demo', adapterOptions: { stepMs: 20 }, card: { name: 'Secret' }, scopes: ['agent:secret'] },
};

beforeAll(async () => {
  issuer = await createTestIssuer();
  gw = await startTestGateway({ name: 'mcp', config: { agents: AGENTS, auth: { enabled: true, issuers: [issuer.config] }, push: { allowedHosts: ['127.0.0.1'] } } });
  receiver = await startWebhookReceiver({ jwksUrl: `${gw.url}/.well-known/jwks.json` });
  token = await issuer.token({ sub: 'mcp-user' });
  secretToken = await issuer.token({ sub: 'mcp-user', scope: 'a2a:read a2a:write agent:secret' });
});

afterAll(async () => {
  await receiver?.close();
  await gw?.close();
});

async function connect(t = token, headers: Record<string, string> = { Authorization: `Bearer ${t}` }): Promise<Client> {
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), { requestInit: { headers } }));
  return client;
}

const textOf = (result: CallToolResult): string =>
  result.content
    .map((block) => (block.type === 'text' ? block.text : ''))
    .join('');

describe('tools', () => {
  it('lists the agents the caller may use, each with its card and skills, and not the others', async () => {
    const client = await connect();
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(['demo']);
      const [demo] = tools;
      expect(demo?.title).toBe('Demo');
      expect(demo?.description).toContain('The demo agent.');
      expect(demo?.description).toContain('(echo)');
      expect(demo?.inputSchema.required).toEqual(['message']);
      expect(demo?.execution?.taskSupport).toBe('optional');
    } finally {
      await client.close();
    }
    const widened = await connect(secretToken);
    try {
      expect((await widened.listTools()).tools.map((tool) => tool.name)).toEqual(['demo', 'secret']);
    } finally {
      await widened.close();
    }
  });

  it('answers a tool call with the agent\'s answer, from an A2A task the A2A bindings read too', async () => {
    const client = await connect();
    try {
      const result = (await client.callTool({ name: 'demo', arguments: { message: 'hello from mcp' } })) as CallToolResult;
      expect(result.isError).toBe(false);
      expect(textOf(result)).toBe('hello from mcp');
      const { taskId, state } = result.structuredContent as { taskId: string; state: string };
      expect(state).toBe('TASK_STATE_COMPLETED');
      const read = await rpc(`${gw.url}/agents/demo/a2a/jsonrpc`, 'GetTask', { id: taskId }, { Authorization: `Bearer ${token}` });
      expect((read.body.result as { status: { state: string } }).status.state).toBe('TASK_STATE_COMPLETED');
      // Owner scoping: the same subject's task, not another's.
      const other = await issuer.token({ sub: 'someone-else' });
      const refused = await rpc(`${gw.url}/agents/demo/a2a/jsonrpc`, 'GetTask', { id: taskId }, { Authorization: `Bearer ${other}` });
      expect((refused.body.error as { code: number }).code).toBe(-32001);
    } finally {
      await client.close();
    }
  });

  it('refuses a call to an agent the caller may not use, and bad arguments', async () => {
    const client = await connect();
    try {
      await expect(client.callTool({ name: 'secret', arguments: { message: 'let me in' } })).rejects.toThrow(/agent:secret/);
      await expect(client.callTool({ name: 'demo', arguments: { text: 'wrong field' } })).rejects.toThrow(/message/);
      await expect(client.callTool({ name: 'nobody', arguments: { message: 'hi' } })).rejects.toThrow(/no tool/);
    } finally {
      await client.close();
    }
    // A reader may list the tools and read tasks, but not send: the operation's own scope.
    const reader = await connect(await issuer.token({ sub: 'mcp-user', scope: 'a2a:read' }));
    try {
      expect((await reader.listTools()).tools.map((tool) => tool.name)).toEqual(['demo']);
      await expect(reader.callTool({ name: 'demo', arguments: { message: 'hi' } })).rejects.toThrow(/a2a:write/);
    } finally {
      await reader.close();
    }
  });

  it('sends the task\'s progress as MCP progress notifications when the client asks for them', async () => {
    const client = await connect();
    try {
      const lines: string[] = [];
      const result = await client.callTool({ name: 'demo', arguments: { message: 'stream one two three four' } }, CallToolResultSchema, {
        onprogress: (progress) => lines.push(progress.message ?? ''),
      });
      expect(textOf(result as CallToolResult)).toBe('one two three four');
      // The first line names the MCP task, for a client whose call would be cut off.
      const { mcpTaskId } = (result as CallToolResult).structuredContent as { mcpTaskId: string };
      expect(lines[0]).toMatch(new RegExp(`^TASK_STATE_[A-Z_]+ \\(MCP task ${mcpTaskId}\\)$`));
      const chunks = lines.filter((line) => line.startsWith('artifact '));
      expect(chunks.length).toBeGreaterThanOrEqual(4);
      expect(chunks.join(' ')).toContain('three');
    } finally {
      await client.close();
    }
  });

  it('carries a conversation on: a task that asks for input is answered by calling again with its taskId', async () => {
    const client = await connect();
    try {
      const asked = (await client.callTool({ name: 'demo', arguments: { message: 'dialogue' } })) as CallToolResult;
      const { taskId, state } = asked.structuredContent as { taskId: string; state: string };
      expect(state).toBe('TASK_STATE_INPUT_REQUIRED');
      expect(textOf(asked)).toContain('What is your name?');
      const answered = (await client.callTool({ name: 'demo', arguments: { message: 'Ada', taskId } })) as CallToolResult;
      expect((answered.structuredContent as { state: string }).state).toBe('TASK_STATE_COMPLETED');
      expect(textOf(answered)).toContain('Ada');
    } finally {
      await client.close();
    }
  });
});

describe('the same durable path as A2A', () => {
  it('pushes a tool call\'s task like any other: a push config set over A2A gets its events', async () => {
    const client = await connect();
    try {
      const created = await client.request({ method: 'tools/call', params: { name: 'demo', arguments: { message: 'long 10' }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
      const taskId = created.task.taskId.slice('demo:'.length);
      const pusher = await issuer.token({ sub: 'mcp-user', scope: 'a2a:read a2a:write a2a:push' });
      const configured = await rpc(`${gw.url}/agents/demo/a2a/jsonrpc`, 'CreateTaskPushNotificationConfig', { taskId, url: `${receiver.url}/mcp-hook` }, { Authorization: `Bearer ${pusher}` });
      expect(configured.body.error).toBeUndefined();
      const final = await waitFor(
        () => receiver.accepted('/mcp-hook').find((delivery) => JSON.stringify(delivery.json ?? {}).includes('TASK_STATE_COMPLETED')),
        30_000,
        'the completion to be pushed',
      );
      expect(final.ed25519Valid).toBe(true);
      expect((await client.experimental.tasks.getTask(created.task.taskId)).status).toBe('completed');
    } finally {
      await client.close();
    }
  });

  it('takes the API keys the bindings take: the key\'s owner owns the task', async () => {
    const platform = await issuer.token({ sub: 'root', scope: 'a2a:admin a2a:platform' });
    const created = await adminCall(gw.url, 'POST', '/api-keys', { token: platform, body: { owner: 'mcp-bot', scopes: ['a2a:read', 'a2a:write'], expiresAt: new Date(Date.now() + 3_600_000).toISOString() } });
    expect(created.status).toBe(201);
    const key = created.body.key as string;
    const client = await connect('', { 'X-API-Key': key });
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['demo']);
      const result = (await client.callTool({ name: 'demo', arguments: { message: 'keyed' } })) as CallToolResult;
      expect(textOf(result)).toBe('keyed');
      const { taskId } = result.structuredContent as { taskId: string };
      const taskHash = await gw.redis.hgetall(gw.gateway.store.keys.task(taskId).task);
      expect(decodeURIComponent(taskHash.owner ?? '')).toBe('demo//key:mcp-bot');
    } finally {
      await client.close();
    }
    const wrong = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'X-API-Key': `${key.slice(0, -4)}AAAA` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toContain('resource_metadata=');
  });
});

describe('metrics', () => {
  const scrape = async (): Promise<Scrape> => {
    const response = await fetch(`${gw.url}/metrics`, { headers: { Authorization: `Bearer ${await issuer.token({ sub: 'prometheus', scope: 'a2a:metrics' })}` } });
    expect(response.status).toBe(200);
    return parseScrape(await response.text());
  };

  it('counts /mcp requests under binding mcp by MCP method (made-up methods as one), and tool calls by outcome', async () => {
    const before = await scrape();
    const client = await connect();
    try {
      await client.listTools();
      await client.callTool({ name: 'demo', arguments: { message: 'counted' } });
      await client.callTool({ name: 'demo', arguments: { message: 'dialogue' } });
      await expect(client.callTool({ name: 'secret', arguments: { message: 'refused' } })).rejects.toThrow();
      await expect(client.request({ method: 'made/up' as 'ping' }, CallToolResultSchema)).rejects.toThrow();
    } finally {
      await client.close();
    }
    const delta = (after: Scrape, name: string, labels: Record<string, string>): number => after.value(name, labels) - before.value(name, labels);
    // A request is counted when its response has ended, a moment after the client read it.
    const after = await waitFor(async () => {
      const now = await scrape();
      return delta(now, 'a2a_requests_total', { binding: 'mcp', method: 'mcp tools/call', status: '200' }) >= 3 ? now : undefined;
    }, 10_000, 'the tool calls to be counted');
    expect(delta(after, 'a2a_requests_total', { binding: 'mcp', method: 'mcp tools/call', status: '200' })).toBe(3);
    expect(delta(after, 'a2a_requests_total', { binding: 'mcp', method: 'mcp tools/list' })).toBe(1);
    expect(delta(after, 'a2a_requests_total', { binding: 'mcp', method: 'mcp initialize' })).toBe(1);
    expect(delta(after, 'a2a_requests_total', { binding: 'mcp', method: 'mcp other' })).toBe(1);
    expect(after.families.find((family) => family.name === 'a2a_requests_total')?.metrics.some((sample) => sample.labels?.method === 'mcp made/up')).toBe(false);
    expect(delta(after, 'a2a_mcp_tool_calls_total', { outcome: 'completed' })).toBe(1);
    expect(delta(after, 'a2a_mcp_tool_calls_total', { outcome: 'input_required' })).toBe(1);
    expect(delta(after, 'a2a_mcp_tool_calls_total', { outcome: 'refused' })).toBe(1);
  });
});

describe('authorization', () => {
  it('answers 401 without a token, naming the protected resource metadata, which names the issuers', async () => {
    const response = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(response.status).toBe(401);
    const challenge = response.headers.get('www-authenticate') ?? '';
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
    expect(challenge).toMatch(/^Bearer /);
    expect(metadataUrl).toBe(`${gw.url}/.well-known/oauth-protected-resource/mcp`);
    const body = (await response.json()) as { jsonrpc: string; error: { code: number } };
    expect(body.jsonrpc).toBe('2.0');
    const metadata = (await (await fetch(metadataUrl as string)).json()) as { resource: string; authorization_servers: string[]; scopes_supported: string[] };
    expect(metadata.resource).toBe(`${gw.url}/mcp`);
    expect(metadata.authorization_servers).toEqual([TEST_ISSUER]);
    expect(metadata.scopes_supported).toEqual(expect.arrayContaining(['a2a:read', 'a2a:write', 'agent:secret']));
    expect((await fetch(`${gw.url}/.well-known/oauth-protected-resource`)).status).toBe(200);
  });

  it('refuses a bad token with 401 and the SDK client cannot connect without one', async () => {
    const response = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: 'Bearer not-a-token' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toContain('resource_metadata=');
    const client = new Client({ name: 'mcp-test', version: '1.0.0' });
    await expect(client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`)))).rejects.toThrow();
  });

  it('answers only POST (stateless), and bounds the body like the bindings do', async () => {
    const get = await fetch(`${gw.url}/mcp`, { headers: { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const huge = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'demo', arguments: { message: 'x'.repeat(gw.config.maxBodyBytes) } } }),
    });
    expect(huge.status).toBe(413);
  });
});

describe('bounds', () => {
  let bounded: TestGateway;
  const log = captureLogLines();
  beforeAll(async () => {
    bounded = await startTestGateway({ name: 'mcp-bounds', logger: createLogger('info', 'a2a-gateway', log.destination), config: { corsOrigins: ['https://console.example'], mcp: { maxWaitMs: 300, maxToolsPerPage: 1 }, agents: { one: { adapter: 'demo', adapterOptions: { stepMs: 20 } }, two: { adapter: 'demo' } } } });
  });
  afterAll(async () => {
    await bounded?.close();
  });

  it('stops waiting after mcp.maxWaitMs, names the MCP task, and tasks/result fetches the rest; tools/list pages by mcp.maxToolsPerPage', async () => {
    const client = new Client({ name: 'mcp-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${bounded.url}/mcp`)));
    try {
      const early = (await client.callTool({ name: 'one', arguments: { message: 'long 40' } })) as CallToolResult;
      const { mcpTaskId, state } = early.structuredContent as { mcpTaskId: string; state: string };
      expect(state).toBe('TASK_STATE_WORKING');
      expect(textOf(early)).toContain('still TASK_STATE_WORKING');
      // The access log names the MCP method and the A2A task it was about.
      const taskId = (early.structuredContent as { taskId: string }).taskId;
      await waitFor(() => (log.lines.some((line) => line.msg === 'request' && line.path === '/mcp' && line.operation === 'mcp tools/call' && line.taskId === taskId) ? true : undefined), 5_000, 'the access log line');
      // tasks/result waits no longer either: a result is what a task settled with.
      await expect(client.experimental.tasks.getTaskResult(mcpTaskId, CallToolResultSchema)).rejects.toThrow(/still TASK_STATE_WORKING/);
      await waitFor(async () => ((await client.experimental.tasks.getTask(mcpTaskId)).status === 'completed' ? true : undefined), 20_000, 'the task to complete');
      const rest = await client.experimental.tasks.getTaskResult(mcpTaskId, CallToolResultSchema);
      expect((rest.structuredContent as { state: string }).state).toBe('TASK_STATE_COMPLETED');

      const first = await client.listTools();
      expect(first.tools.map((tool) => tool.name)).toEqual(['one']);
      const second = await client.listTools({ cursor: first.nextCursor as string });
      expect(second.tools.map((tool) => tool.name)).toEqual(['two']);
      expect(second.nextCursor).toBeUndefined();
      await expect(client.listTools({ cursor: 'forged' })).rejects.toThrow(/cursor/);
    } finally {
      await client.close();
    }
  });

  it('refuses a foreign Origin (DNS rebinding) and answers a body that is not JSON with a JSON-RPC error', async () => {
    const post = (headers: Record<string, string>, body: string) =>
      fetch(`${bounded.url}/mcp`, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers }, body });
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const foreign = await post({ Origin: 'https://evil.example' }, ping);
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as { error: { message: string } }).error.message).toContain('corsOrigins');
    expect((await post({ Origin: 'https://console.example' }, ping)).status).toBe(200);
    const broken = await post({}, '{"jsonrpc":');
    expect(broken.status).toBe(200);
    expect(((await broken.json()) as { jsonrpc: string; error: { code: number } }).error.code).toBe(-32700);
  });
});

describe('mcp.enabled=false', () => {
  it('serves neither /mcp nor its resource metadata', async () => {
    const off = await startTestGateway({ name: 'mcp-off', config: { mcp: { enabled: false } } });
    try {
      const post = await fetch(`${off.url}/mcp`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) });
      expect(post.status).toBe(404);
      expect((await fetch(`${off.url}/.well-known/oauth-protected-resource/mcp`)).status).toBe(404);
    } finally {
      await off.close();
    }
  });
});

describe('limits', () => {
  let limited: TestGateway;
  beforeAll(async () => {
    limited = await startTestGateway({
      name: 'mcp-limits',
      config: {
        agents: {
          default: { adapter: 'demo', adapterOptions: { stepMs: 20 } },
          // One call, then the bucket is empty for a long while.
          rationed: { adapter: 'demo', adapterOptions: { stepMs: 20 }, limits: { requestsPerSecond: 0.001, burst: 1 } },
        },
        limits: { ...LIMITS_OFF, maxStreamsPerOwner: 1 },
      },
    });
  });
  afterAll(async () => {
    await limited?.close();
  });

  it('charges a tool call to the agent\'s request rate, as a SendMessage is', async () => {
    const client = new Client({ name: 'mcp-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${limited.url}/mcp`)));
    try {
      expect(textOf((await client.callTool({ name: 'rationed', arguments: { message: 'first' } })) as CallToolResult)).toBe('first');
      await expect(client.callTool({ name: 'rationed', arguments: { message: 'second' } })).rejects.toThrow(/requestsPerSecond/);
    } finally {
      await client.close();
    }
  });

  it('holds one of the owner\'s stream slots while a call waits, and gives it back when the client leaves', async () => {
    const connectTo = async (): Promise<Client> => {
      const client = new Client({ name: 'mcp-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${limited.url}/mcp`)));
      return client;
    };
    const first = await connectTo();
    const second = await connectTo();
    try {
      let progressed = false;
      const waiting = first.callTool({ name: 'default', arguments: { message: 'long 500' } }, CallToolResultSchema, {
        onprogress: () => {
          progressed = true;
        },
      });
      waiting.catch(() => undefined);
      await waitFor(() => (progressed ? true : undefined), 20_000, 'the first call to make progress');
      await expect(second.callTool({ name: 'default', arguments: { message: 'hello' } })).rejects.toThrow(/maxStreamsPerOwner/);
      // The client leaves (its connections close): the wait ends and frees the slot; the task goes on.
      await first.close();
      const answered = await waitFor(
        async () => {
          try {
            return (await second.callTool({ name: 'default', arguments: { message: 'hello again' } })) as CallToolResult;
          } catch {
            return undefined;
          }
        },
        5_000,
        'the slot to come back',
      );
      expect(textOf(answered)).toBe('hello again');
    } finally {
      await first.close();
      await second.close();
    }
  });
});
