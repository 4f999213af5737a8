// A downstream A2A agent (JSON-RPC, hand-written so it can misbehave) for the remote adapter's
// trust tests: the text of a message picks what its answer does (hostile:<mode>), and every call
// is recorded with the credential it carried. Modes: huge-body, giant-event, endless, hang,
// redirect-same (307 to another path of this origin), redirect-away (307 to `redirectTo`).
// Anything else completes at once.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedCall {
  path: string;
  /** The JSON-RPC method ('' for a GET). */
  method: string;
  authorization: string | undefined;
  body: string;
}

export interface HostileDownstream {
  /** Base URL (the card is at /.well-known/agent-card.json). */
  url: string;
  origin: string;
  calls: RecordedCall[];
  /** Sends (SendMessage, SendStreamingMessage) whose message holds `text`. */
  sends(text: string): number;
  close(): Promise<void>;
}

export interface HostileDownstreamOptions {
  /** Whether the card offers streaming (the adapter then streams sends and resubscribes). */
  streaming: boolean;
  /** The interface URL the card names (default: this server's /rpc). */
  interfaceUrl?: (base: string) => string;
  /** Where redirect-away points. */
  redirectTo?: string;
}

const CHUNK = 'x'.repeat(64 * 1024);

async function bodyOf(request: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of request) text += (chunk as Buffer).toString('utf8');
  return text;
}

/** Writes `next()` until the reader goes (or `limit` bytes), waiting for the socket between writes. */
function pour(response: ServerResponse, next: () => string, limit = 512 * 1024 * 1024): void {
  let written = 0;
  const write = (): void => {
    while (!response.destroyed && written < limit) {
      const chunk = next();
      written += chunk.length;
      if (!response.write(chunk)) return;
    }
    if (!response.destroyed) response.end();
  };
  response.on('drain', write);
  write();
}

export async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export async function startHostileDownstream(options: HostileDownstreamOptions): Promise<HostileDownstream> {
  const calls: RecordedCall[] = [];
  let base = '';
  let count = 0;
  const server = createServer((request, response) => {
    void (async () => {
      const path = request.url ?? '/';
      const body = await bodyOf(request);
      const method = /"method"\s*:\s*"([^"]+)"/.exec(body)?.[1] ?? '';
      calls.push({ path, method, authorization: request.headers.authorization, body });
      if (request.method === 'GET' && path === '/.well-known/agent-card.json') {
        response.writeHead(200, { 'Content-Type': 'application/json' }).end(
          JSON.stringify({
            name: 'hostile downstream',
            description: 'Misbehaves on request.',
            supportedInterfaces: [{ url: options.interfaceUrl?.(base) ?? `${base}/rpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
            version: '1.0.0',
            capabilities: { streaming: options.streaming, pushNotifications: false, extensions: [], extendedAgentCard: false },
            securitySchemes: {},
            securityRequirements: [],
            defaultInputModes: ['text/plain'],
            defaultOutputModes: ['text/plain'],
            skills: [{ id: 'misbehave', name: 'misbehave', description: 'misbehaves', tags: ['test'] }],
          }),
        );
        return;
      }
      const id = JSON.stringify((JSON.parse(body || '{}') as { id?: unknown }).id ?? 1);
      // Only the first path takes a mode: a redirected call (to /rpc-moved) is answered plainly.
      const mode = path === '/rpc' ? (/hostile:([a-z-]+)/.exec(body)?.[1] ?? 'calm') : 'calm';
      const named = /"id"\s*:\s*"(t-[a-z-]+-\d+)"/.exec(body)?.[1];
      const taskId = named ?? `t-${mode}-${(count += 1)}`;
      const rpc = (result: unknown): string => `{"jsonrpc":"2.0","id":${id},"result":${JSON.stringify(result)}}`;
      const task = (state: string, text?: string): Record<string, unknown> => ({
        id: taskId,
        contextId: 'ctx',
        status: { state },
        artifacts: text === undefined ? [] : [{ artifactId: 'a', parts: [{ text }] }],
      });
      const streamed = method === 'SendStreamingMessage' || method === 'SubscribeToTask';
      const openStream = (): void => {
        response.writeHead(200, { 'Content-Type': 'text/event-stream' });
        response.write(`data: ${rpc({ task: task('TASK_STATE_WORKING') })}\n\n`);
      };
      if (method === 'ListTasks') {
        response.writeHead(200, { 'Content-Type': 'application/json' }).end(rpc({ tasks: [], nextPageToken: '', pageSize: 0, totalSize: 0 }));
        return;
      }
      if (method === 'GetTask' || method === 'CancelTask') {
        // A task that went wrong stays open: only the adapter's bounds end its turn.
        response.writeHead(200, { 'Content-Type': 'application/json' }).end(rpc(task('TASK_STATE_WORKING')));
        return;
      }
      switch (mode) {
        case 'huge-body':
          response.writeHead(200, { 'Content-Type': 'application/json' });
          response.write(`{"jsonrpc":"2.0","id":${id},"result":{"task":{"id":"${taskId}","contextId":"ctx","status":{"state":"TASK_STATE_WORKING"},"artifacts":[{"artifactId":"a","parts":[{"text":"`);
          pour(response, () => CHUNK);
          return;
        case 'giant-event':
          openStream();
          response.write(`data: {"jsonrpc":"2.0","id":${id},"result":{"artifactUpdate":{"taskId":"${taskId}","contextId":"ctx","artifact":{"artifactId":"g","parts":[{"text":"`);
          pour(response, () => CHUNK);
          return;
        case 'endless': {
          openStream();
          let n = 0;
          const text = 'e'.repeat(16 * 1024);
          pour(response, () => `data: ${rpc({ artifactUpdate: { taskId, contextId: 'ctx', artifact: { artifactId: `a-${(n += 1)}`, parts: [{ text }] } } })}\n\n`);
          return;
        }
        case 'hang':
          if (streamed) openStream();
          else {
            response.writeHead(200, { 'Content-Type': 'application/json' });
            response.write(`{"jsonrpc":"2.0","id":${id},"result":{"task":`);
          }
          return; // never ends
        case 'redirect-same':
          response.writeHead(307, { Location: '/rpc-moved' }).end();
          return;
        case 'redirect-away':
          response.writeHead(307, { Location: `${options.redirectTo ?? 'http://localhost:9'}/rpc` }).end();
          return;
        default: {
          const done = task('TASK_STATE_COMPLETED', `done at ${path}`);
          if (streamed) response.writeHead(200, { 'Content-Type': 'text/event-stream' }).end(`data: ${rpc({ task: done })}\n\n`);
          else response.writeHead(200, { 'Content-Type': 'application/json' }).end(rpc({ task: done }));
        }
      }
    })();
  });
  base = await listen(server);
  return {
    url: base,
    origin: new URL(base).origin,
    calls,
    sends: (text) => calls.filter((call) => call.method.startsWith('Send') && call.body.includes(text)).length,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
