// The backends of the abuse run's hostile section: an OpenAI-compatible model server and an A2A
// agent that answer each request with what its message asks for (huge, endless, malformed or
// hung data, or a redirect to another origin), and that other origin, which records whether
// any credential followed the redirect. The message text picks the behaviour, so one gateway
// configuration reaches every one of them through ordinary tasks.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const HOSTILE_MODES = ['huge-delta', 'endless', 'giant-event', 'huge-body', 'hang', 'malformed', 'redirect'] as const;
export type HostileMode = (typeof HOSTILE_MODES)[number];

/** What the backends sent and saw, for the run's report. */
export interface HostileStats {
  /** Bytes written to the gateway's workers, by mode. */
  bytesSent: Record<string, number>;
  /** Requests that reached the other origin after a redirect, and which of them carried a credential. */
  redirected: number;
  credentialsLeaked: string[];
}

const MIB = 1024 * 1024;
/** Bytes one answer of a hostile mode sends at most: far past any bound, and the run stays bounded if none holds. */
const ANSWER_CAP = 1536 * MIB;
// What the endless modes write again and again, encoded once: the backend's own cost stays small.
const G_MIB = Buffer.from('g'.repeat(MIB));
const B_MIB = Buffer.from('b'.repeat(MIB));

/** The token the gateway is configured to send to the hostile A2A agent, looked for at the other origin. */
export const DOWNSTREAM_TOKEN = 'abuse-downstream-secret';

/** Reads up to 64 KiB of a request (the gateway's own request: what mode it asks for), discards the rest. */
async function requestHead(request: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of request) {
    if (text.length < 65_536) text += (chunk as Buffer).toString('utf8');
  }
  return text;
}

function modeOf(text: string): HostileMode | undefined {
  return HOSTILE_MODES.find((mode) => text.includes(`hostile:${mode}`));
}

/**
 * Writes `next()` until `limit` bytes are out or the reader goes, waiting for the socket to
 * drain between writes; resolves with the bytes written.
 */
function pour(response: ServerResponse, next: () => string | Buffer, limit = ANSWER_CAP): Promise<number> {
  return new Promise((resolve) => {
    let written = 0;
    const done = (): void => {
      response.off('drain', write);
      resolve(written);
    };
    const write = (): void => {
      while (!response.destroyed && written < limit) {
        const chunk = next();
        written += Buffer.byteLength(chunk);
        if (!response.write(chunk)) return;
      }
      if (!response.destroyed) response.end();
      done();
    };
    response.on('drain', write);
    response.once('close', done);
    write();
  });
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export interface HostileBackends {
  /** The model server's base URL (OpenAI's `/v1` included). */
  modelBaseUrl: string;
  /** The A2A agent's card URL. */
  agentUrl: string;
  stats: HostileStats;
  close(): Promise<void>;
}

/** `onStats`: called with the stats whenever they change (a process of their own reports them so). */
export async function startHostileBackends(onStats?: (stats: HostileStats) => void): Promise<HostileBackends> {
  const stats: HostileStats = { bytesSent: {}, redirected: 0, credentialsLeaked: [] };
  const count = (mode: string, bytes: number): void => {
    stats.bytesSent[mode] = (stats.bytesSent[mode] ?? 0) + bytes;
    onStats?.(stats);
  };
  const servers: Server[] = [];
  const serve = (handler: (request: IncomingMessage, response: ServerResponse) => Promise<void>): Server => {
    const server = createServer((request, response) => {
      handler(request, response).catch(() => response.destroy());
    });
    servers.push(server);
    return server;
  };

  // Elsewhere: the other origin a redirect points at. Anything credential-like that reaches it leaked.
  const elsewhere = serve(async (request, response) => {
    await requestHead(request);
    stats.redirected += 1;
    for (const name of ['authorization', 'x-api-key', 'signature', 'signature-input']) {
      const value = request.headers[name];
      if (value !== undefined) stats.credentialsLeaked.push(`${name}: ${String(value).slice(0, 40)}`);
    }
    onStats?.(stats);
    response.writeHead(404, { 'Content-Type': 'application/json' }).end('{"error":"nothing here"}');
  });
  const elsewhereUrl = await listen(elsewhere);

  const model = serve(async (request, response) => {
    const mode = modeOf(await requestHead(request));
    const chunk = (content: string): string =>
      `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'hostile', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
    const sse = (): void => {
      response.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    };
    switch (mode) {
      case 'huge-delta': {
        sse();
        const delta = Buffer.from(chunk('x'.repeat(8 * MIB)));
        count(mode, await pour(response, () => delta));
        return;
      }
      case 'endless': {
        sse();
        const delta = Buffer.from(chunk('endless '.repeat(128)));
        count(mode, await pour(response, () => delta));
        return;
      }
      case 'giant-event': {
        sse();
        response.write('data: {"id":"c","choices":[{"index":0,"delta":{"content":"');
        count(mode, await pour(response, () => G_MIB));
        return;
      }
      case 'huge-body': {
        response.writeHead(200, { 'Content-Type': 'application/json' });
        response.write('{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"');
        count(mode, await pour(response, () => B_MIB));
        return;
      }
      case 'hang':
        sse();
        response.write(chunk('and then nothing'));
        count(mode, 1);
        return; // never ends; the gateway's bounds must cut it
      case 'malformed': {
        sse();
        const garbage = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256));
        count(mode, await pour(response, () => garbage, 64 * MIB));
        return;
      }
      case 'redirect':
        response.writeHead(307, { Location: `${elsewhereUrl}/v1/chat/completions` }).end();
        return;
      default:
        sse();
        response.write(chunk('a calm answer'));
        response.end(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'hostile', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`);
    }
  });
  const modelUrl = await listen(model);

  let agentBase = '';
  let taskCount = 0;
  const agent = serve(async (request, response) => {
    const path = request.url ?? '/';
    if (request.method === 'GET' && path.startsWith('/.well-known/agent-card.json')) {
      await requestHead(request);
      response.writeHead(200, { 'Content-Type': 'application/json' }).end(
        JSON.stringify({
          name: 'hostile agent',
          description: 'Answers with whatever hurts.',
          supportedInterfaces: [{ url: `${agentBase}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
          version: '1.0.0',
          capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
          securitySchemes: {},
          securityRequirements: [],
          defaultInputModes: ['text/plain'],
          defaultOutputModes: ['text/plain'],
          skills: [{ id: 'hurt', name: 'hurt', description: 'hurts', tags: ['abuse'] }],
        }),
      );
      return;
    }
    const body = await requestHead(request);
    const method = /"method"\s*:\s*"([^"]+)"/.exec(body)?.[1] ?? '';
    const id = /"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*("[^"]*"|\d+)/.exec(body)?.[1] ?? /"id"\s*:\s*("[^"]*"|\d+)/.exec(body)?.[1] ?? '1';
    // A new task's mode is in its message; a later call on it (GetTask, SubscribeToTask) names the task, whose id carries the mode.
    const named = /hostile-task-([a-z-]+)-\d+/.exec(body)?.[1];
    const mode = modeOf(body) ?? HOSTILE_MODES.find((known) => known === named);
    const taskId = named === undefined ? `hostile-task-${mode ?? 'calm'}-${(taskCount += 1)}` : (/hostile-task-[a-z-]+-\d+/.exec(body)?.[0] as string);
    const streamed = /Stream|Subscribe|resubscribe/i.test(method);
    const rpc = (result: unknown): string => JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(id) as unknown, result });
    const event = (result: unknown): string => `data: ${rpc(result)}\n\n`;
    const task = (state: string, artifacts: unknown[] = []): Record<string, unknown> => ({ id: taskId, contextId: 'hostile-context', status: { state }, artifacts });
    // A JSON-RPC answer opened by hand, so its body can go on for as long as the mode wants.
    const openAnswer = (): void => {
      response.writeHead(200, { 'Content-Type': 'application/json' });
      response.write(`{"jsonrpc":"2.0","id":${id},"result":{"task":{"id":"${taskId}","contextId":"c","status":{"state":"TASK_STATE_WORKING"},"artifacts":[{"artifactId":"a","parts":[{"text":"`);
    };
    const openStream = (): void => {
      response.writeHead(200, { 'Content-Type': 'text/event-stream' });
      response.write(event({ task: task('TASK_STATE_WORKING') }));
    };
    switch (mode) {
      case 'huge-body':
      case 'huge-delta':
        openAnswer();
        count(mode, await pour(response, () => B_MIB));
        return;
      case 'endless': {
        if (streamed) {
          openStream();
          let n = 0;
          // One 1 MiB artifact per event, each under a new id: only the id is new per event.
          const [head, tail] = event({ artifactUpdate: { taskId, contextId: 'hostile-context', artifact: { artifactId: 'a-@@', parts: [{ text: 'e'.repeat(MIB) }] } } }).split('@@') as [string, string];
          const tailBytes = Buffer.from(tail);
          count(mode, await pour(response, () => Buffer.concat([Buffer.from(`${head}${(n += 1)}`), tailBytes])));
          return;
        }
        // Polled: every read shows 4 MB of new artifacts.
        const answer = rpc({ task: task('TASK_STATE_WORKING', [{ artifactId: `a-${Date.now()}-${Math.random()}`, parts: [{ text: 'e'.repeat(4 * MIB) }] }]) });
        count(mode, Buffer.byteLength(answer));
        response.writeHead(200, { 'Content-Type': 'application/json' }).end(answer);
        return;
      }
      case 'giant-event':
        if (!streamed) {
          openAnswer();
        } else {
          openStream();
          response.write(`data: {"jsonrpc":"2.0","id":${id},"result":{"artifactUpdate":{"taskId":"${taskId}","artifact":{"artifactId":"g","parts":[{"text":"`);
        }
        count(mode, await pour(response, () => G_MIB));
        return;
      case 'hang':
        if (streamed) openStream();
        else openAnswer();
        count(mode, 1);
        return; // never ends; the gateway's bounds must cut it
      case 'malformed': {
        response.writeHead(200, { 'Content-Type': streamed ? 'text/event-stream' : 'application/json' });
        const garbage = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256));
        count(mode, await pour(response, () => garbage, 64 * MIB));
        return;
      }
      case 'redirect':
        response.writeHead(307, { Location: `${elsewhereUrl}/a2a/jsonrpc` }).end();
        return;
      default: {
        const done = { task: task('TASK_STATE_COMPLETED') };
        if (streamed) response.writeHead(200, { 'Content-Type': 'text/event-stream' }).end(event(done));
        else response.writeHead(200, { 'Content-Type': 'application/json' }).end(rpc(done));
      }
    }
  });
  agentBase = await listen(agent);

  return {
    modelBaseUrl: `${modelUrl}/v1`,
    agentUrl: `${agentBase}/.well-known/agent-card.json`,
    stats,
    async close() {
      for (const server of servers) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    },
  };
}
