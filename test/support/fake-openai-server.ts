// A local OpenAI-compatible chat-completions server for tests (and for chaos runs, as its own
// process: `node --import tsx test/support/fake-openai-server.ts --port 8091`). It never talks
// to anything else. What it does is scripted by words in the last user message:
//
//   slow | slow=MS         stream one chunk every MS ms (default 100)
//   words=N                the reply is N words "w1 w2 … wN" (default: "You said: <message>")
//   burst=N                N one-word chunks written at once (one socket write)
//   ask                    call ask_user({question: "What is your name?"}) when the tool is offered
//   tool=NAME              call a tool NAME instead of replying
//   length                 finish with finish_reason "length"
//   vary                   a retry's reply (try 2, 3 …) differs after its first word: "w1 w2-t2 …"
//   no-usage               report no usage, even when asked
//   fail-500[=N]           the first N requests with this message get 500 (default 1)
//   rate-limit[=N]         the first N get 429, with retry-after=S and/or retry-after-ms=MS if given
//   fail-400 | fail-401 | fail-404   refuse with that status and an OpenAI-style error body
//   cut[=N]                the first N streams are cut (socket destroyed) halfway through
//   end-early[=N]          the first N streams end cleanly halfway, without finish_reason or [DONE]
//   stall[=N]              the first N streams send two chunks, then nothing
//   stream-error[=N]       the first N streams send an error event halfway
//
// Every request is recorded (headers, model, messages, tools, stream flag) and so is every
// client that went away before its reply ended (`disconnects`). GET /_fake/requests returns
// the records as JSON, POST /_fake/reset clears them, for a caller in another process.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

export interface RecordedMessage {
  role: string;
  content: string;
}

export interface RecordedRequest {
  /** 0 for the first request this server got. */
  index: number;
  path: string;
  headers: Record<string, string>;
  model: string;
  messages: RecordedMessage[];
  stream: boolean;
  includeUsage: boolean;
  tools: string[];
  temperature: number | undefined;
  maxTokens: number | undefined;
  /** The text of the last user message (what scripts the reply). */
  lastUserText: string;
  /** Which try of this same last user message this is (1 for the first). */
  tryNumber: number;
  /** The status the server answered with. */
  status: number;
  /** Content chunks written (streamed replies). */
  chunksSent: number;
  /** The reply text the server meant to send in full. */
  replyText: string;
  startedAtMs: number;
  endedAtMs: number | undefined;
  /** The client went away before the reply ended (the server did not cut it). */
  clientDisconnected: boolean;
  /** The server cut or stalled this reply on purpose. */
  sabotaged: boolean;
}

export interface FakeOpenAIServer {
  /** Base URL up to /v1, what the adapter's baseURL option takes. */
  baseURL: string;
  port: number;
  requests: RecordedRequest[];
  /** Requests whose client went away before the reply ended. */
  disconnects(): RecordedRequest[];
  /** Requests whose last user message contains `marker`. */
  requestsFor(marker: string): RecordedRequest[];
  waitFor<T>(probe: () => T | undefined | false, timeoutMs?: number, what?: string): Promise<T>;
  reset(): void;
  close(): Promise<void>;
}

interface Script {
  slowMs: number | undefined;
  words: number | undefined;
  burst: number | undefined;
  ask: boolean;
  tool: string | undefined;
  length: boolean;
  vary: boolean;
  noUsage: boolean;
  fail500: number;
  rateLimit: number;
  retryAfter: string | undefined;
  retryAfterMs: string | undefined;
  refuse: number | undefined;
  cut: number;
  endEarly: number;
  stall: number;
  streamError: number;
}

function parseScript(text: string): Script {
  const script: Script = {
    slowMs: undefined,
    words: undefined,
    burst: undefined,
    ask: false,
    tool: undefined,
    length: false,
    vary: false,
    noUsage: false,
    fail500: 0,
    rateLimit: 0,
    retryAfter: undefined,
    retryAfterMs: undefined,
    refuse: undefined,
    cut: 0,
    endEarly: 0,
    stall: 0,
    streamError: 0,
  };
  for (const token of text.split(/\s+/)) {
    const [key, value] = token.split('=', 2) as [string, string | undefined];
    const count = value === undefined ? 1 : Number(value);
    switch (key) {
      case 'slow':
        script.slowMs = value === undefined ? 100 : Number(value);
        break;
      case 'words':
        script.words = Number(value);
        break;
      case 'burst':
        script.burst = Number(value);
        break;
      case 'ask':
        script.ask = true;
        break;
      case 'tool':
        script.tool = value;
        break;
      case 'length':
        script.length = true;
        break;
      case 'vary':
        script.vary = true;
        break;
      case 'no-usage':
        script.noUsage = true;
        break;
      case 'fail-500':
        script.fail500 = count;
        break;
      case 'rate-limit':
        script.rateLimit = count;
        break;
      case 'retry-after':
        script.retryAfter = value;
        break;
      case 'retry-after-ms':
        script.retryAfterMs = value;
        break;
      case 'fail-400':
        script.refuse = 400;
        break;
      case 'fail-401':
        script.refuse = 401;
        break;
      case 'fail-404':
        script.refuse = 404;
        break;
      case 'cut':
        script.cut = count;
        break;
      case 'end-early':
        script.endEarly = count;
        break;
      case 'stall':
        script.stall = count;
        break;
      case 'stream-error':
        script.streamError = count;
        break;
      default:
        break;
    }
  }
  return script;
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((part) => (typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : '')).join('');
  }
  return '';
}

/** The reply as chunks that concatenate to the whole text (words with their trailing space). */
function replyChunks(script: Script, lastUserText: string, tryNumber: number): string[] {
  const count = script.burst ?? script.words;
  const chunks = count !== undefined ? Array.from({ length: count }, (_, i) => `w${i + 1}${i + 1 < count ? ' ' : ''}`) : (`You said: ${lastUserText}`.match(/\S+\s*/g) ?? ['']);
  if (!script.vary || tryNumber === 1) return chunks;
  // Same first word, then different: what a sampling model does when asked again.
  return chunks.map((chunk, i) => (i === 0 ? chunk : chunk.replace(/^(\S+)/, `$1-t${tryNumber}`)));
}

const ERROR_BODIES: Record<number, { message: string; type: string; code: string | null }> = {
  400: { message: "Invalid value for 'temperature': the fake server refuses this request on purpose.", type: 'invalid_request_error', code: 'invalid_value' },
  401: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' },
  404: { message: 'The model does not exist or you do not have access to it.', type: 'invalid_request_error', code: 'model_not_found' },
  429: { message: 'Rate limit reached for requests.', type: 'requests', code: 'rate_limit_exceeded' },
  500: { message: 'The server had an error while processing your request.', type: 'server_error', code: null },
};

function sendError(res: ServerResponse, status: number, headers: Record<string, string> = {}): void {
  const body = JSON.stringify({ error: ERROR_BODIES[status] ?? { message: `error ${status}`, type: 'server_error', code: null } });
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(body);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function startFakeOpenAIServer(options: { port?: number; host?: string } = {}): Promise<FakeOpenAIServer> {
  const requests: RecordedRequest[] = [];
  const tries = new Map<string, number>();
  const cutByServer = new WeakSet<RecordedRequest>();
  let created = 1_700_000_000;

  async function chat(res: ServerResponse, record: RecordedRequest): Promise<void> {
    const script = parseScript(record.lastUserText);
    const tryNumber = record.tryNumber;
    const fail = (status: number, headers: Record<string, string> = {}): void => {
      record.status = status;
      sendError(res, status, headers);
      record.endedAtMs = Date.now();
    };
    if (script.refuse !== undefined) return fail(script.refuse);
    if (tryNumber <= script.rateLimit) {
      const headers: Record<string, string> = {};
      if (script.retryAfter !== undefined) headers['retry-after'] = script.retryAfter;
      if (script.retryAfterMs !== undefined) headers['retry-after-ms'] = script.retryAfterMs;
      return fail(429, headers);
    }
    if (tryNumber <= script.fail500) return fail(500);

    const offered = record.tools;
    const toolName = script.ask && offered.includes('ask_user') ? 'ask_user' : script.tool;
    const chunks = toolName === undefined ? replyChunks(script, record.lastUserText, tryNumber) : [];
    const toolArgs = toolName === 'ask_user' ? JSON.stringify({ question: 'What is your name?' }) : '{}';
    const finishReason = toolName !== undefined ? 'tool_calls' : script.length ? 'length' : 'stop';
    record.replyText = chunks.join('');
    const promptChars = record.messages.reduce((n, m) => n + m.content.length, 0);
    const usage = { prompt_tokens: Math.ceil(promptChars / 4), completion_tokens: Math.max(1, chunks.length), total_tokens: Math.ceil(promptChars / 4) + Math.max(1, chunks.length) };
    const id = `chatcmpl-fake-${record.index}`;
    created += 1;

    if (!record.stream) {
      const message: Record<string, unknown> = { role: 'assistant', content: toolName === undefined ? record.replyText : null };
      if (toolName !== undefined) message.tool_calls = [{ id: 'call_1', type: 'function', function: { name: toolName, arguments: toolArgs } }];
      if (script.slowMs !== undefined) await delay(script.slowMs * Math.max(1, chunks.length));
      if (res.destroyed) return;
      record.status = 200;
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created,
          model: record.model,
          choices: [{ index: 0, message, finish_reason: finishReason, logprobs: null }],
          ...(script.noUsage ? {} : { usage }),
        }),
      );
      record.endedAtMs = Date.now();
      return;
    }

    record.status = 200;
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
    const frame = (delta: Record<string, unknown>, finish: string | null): string =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: record.model, choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }], ...(record.includeUsage ? { usage: null } : {}) })}\n\n`;
    const write = (text: string): boolean => {
      if (res.destroyed || res.writableEnded) return false;
      res.write(text);
      return true;
    };
    const cutAt = Math.max(1, Math.floor(chunks.length / 2));
    const sabotage = tryNumber <= script.cut ? 'cut' : tryNumber <= script.endEarly ? 'end-early' : tryNumber <= script.stall ? 'stall' : tryNumber <= script.streamError ? 'stream-error' : undefined;

    if (!write(frame({ role: 'assistant', content: '' }, null))) return;
    if (toolName !== undefined) {
      const half = Math.floor(toolArgs.length / 2);
      if (!write(frame({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: toolName, arguments: toolArgs.slice(0, half) } }] }, null))) return;
      if (!write(frame({ tool_calls: [{ index: 0, function: { arguments: toolArgs.slice(half) } }] }, null))) return;
    } else if (script.burst !== undefined) {
      if (!write(chunks.map((c) => frame({ content: c }, null)).join(''))) return;
      record.chunksSent = chunks.length;
    } else {
      for (let i = 0; i < chunks.length; i++) {
        if (sabotage !== undefined && i === (sabotage === 'stall' ? 2 : cutAt)) {
          record.sabotaged = true;
          if (sabotage === 'cut') {
            cutByServer.add(record);
            res.destroy();
            return;
          }
          if (sabotage === 'end-early') {
            res.end();
            record.endedAtMs = Date.now();
            return;
          }
          if (sabotage === 'stream-error') {
            write(`data: ${JSON.stringify({ error: { message: 'The model crashed while generating.', type: 'server_error', code: null } })}\n\n`);
            res.end();
            record.endedAtMs = Date.now();
            return;
          }
          // stall: keep the connection open and silent until the client gives up.
          return;
        }
        if (script.slowMs !== undefined && i > 0) await delay(script.slowMs);
        if (!write(frame({ content: chunks[i] }, null))) return;
        record.chunksSent = i + 1;
      }
    }
    if (!write(frame({}, finishReason))) return;
    if (record.includeUsage && !script.noUsage) {
      write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: record.model, choices: [], usage })}\n\n`);
    }
    write('data: [DONE]\n\n');
    res.end();
    record.endedAtMs = Date.now();
  }

  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      if (req.method === 'GET' && path === '/_fake/requests') {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(requests));
        return;
      }
      if (req.method === 'POST' && path === '/_fake/reset') {
        requests.length = 0;
        tries.clear();
        res.writeHead(204).end();
        return;
      }
      if (req.method === 'GET' && path === '/v1/models') {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'fake-model', object: 'model', created: 0, owned_by: 'fake' }] }));
        return;
      }
      if (req.method !== 'POST' || path !== '/v1/chat/completions') {
        sendError(res, 404);
        return;
      }
      const raw = await readBody(req);
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        sendError(res, 400);
        return;
      }
      const messages = (Array.isArray(body.messages) ? body.messages : []).map((m: { role?: unknown; content?: unknown }) => ({ role: String(m.role), content: contentText(m.content) }));
      const lastUser = [...messages].reverse().find((m) => m.role === 'user');
      const lastUserText = lastUser?.content ?? '';
      const tryNumber = (tries.get(lastUserText) ?? 0) + 1;
      tries.set(lastUserText, tryNumber);
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers[name] = value;
      const tools = (Array.isArray(body.tools) ? body.tools : []).map((t: { function?: { name?: unknown } }) => String(t.function?.name ?? ''));
      const streamOptions = body.stream_options as { include_usage?: unknown } | undefined;
      const record: RecordedRequest = {
        index: requests.length,
        path,
        headers,
        model: String(body.model ?? ''),
        messages,
        stream: body.stream === true,
        includeUsage: streamOptions?.include_usage === true,
        tools,
        temperature: typeof body.temperature === 'number' ? body.temperature : undefined,
        maxTokens: typeof body.max_tokens === 'number' ? body.max_tokens : typeof body.max_completion_tokens === 'number' ? body.max_completion_tokens : undefined,
        lastUserText,
        tryNumber,
        status: 0,
        chunksSent: 0,
        replyText: '',
        startedAtMs: Date.now(),
        endedAtMs: undefined,
        clientDisconnected: false,
        sabotaged: false,
      };
      requests.push(record);
      res.on('close', () => {
        // A reply the server ended, or cut itself, is not the client going away.
        if (!res.writableEnded && !cutByServer.has(record)) record.clientDisconnected = true;
        record.endedAtMs ??= Date.now();
      });
      await chat(res, record);
    })().catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 500);
      else res.destroy(error as Error);
    });
  });

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolveListen());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    baseURL: `http://${host}:${port}/v1`,
    port,
    requests,
    disconnects: () => requests.filter((r) => r.clientDisconnected),
    requestsFor: (marker) => requests.filter((r) => r.lastUserText.includes(marker)),
    async waitFor<T>(probe: () => T | undefined | false, timeoutMs = 20_000, what = 'the fake model server'): Promise<T> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const value = probe();
        if (value !== undefined && value !== false) return value;
        if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
        await delay(20);
      }
    },
    reset() {
      requests.length = 0;
      tries.clear();
    },
    close: () =>
      new Promise<void>((resolveClose) => {
        server.closeAllConnections();
        server.close(() => resolveClose());
      }),
  };
}

function argValue(argv: string[], name: string): string | undefined {
  const index = argv.indexOf(name);
  return index >= 0 ? argv[index + 1] : undefined;
}

// Run as a program: serve until SIGTERM/SIGINT.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const port = Number(argValue(process.argv, '--port') ?? '0');
  const host = argValue(process.argv, '--host') ?? '127.0.0.1';
  const fake = await startFakeOpenAIServer({ port, host });
  process.stdout.write(`fake-openai-server listening on ${fake.baseURL}\n`);
  const stop = (): void => {
    void fake.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
