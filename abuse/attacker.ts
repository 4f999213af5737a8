// One attack, run in its own process so its own work never shows up as the victim's latency:
//   node --import tsx abuse/attacker.ts <attack> '<json options>'
// Every attack is bounded in time and connections, sends only to loopback, and prints one JSON
// line summarising what it saw.
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';

interface Options {
  /** Gateway base URL (http://127.0.0.1:port). */
  url: string;
  durationMs: number;
  /** Loopback address the attacker connects from (127.0.0.2: not the victim's). */
  localAddress: string;
  /** A valid bearer token, for the attacks that have one. */
  token?: string;
  /** rpc-flood: tokens taken in turn, one per request (many owners), instead of `token`. */
  tokens?: string[];
  /** Tasks to subscribe to (slow-subscribers). */
  taskIds?: string[];
  connections?: number;
  perSecond?: number;
  /** rpc-flood: the JSON-RPC method and params ("__N__" in the params becomes the request's number). */
  method?: string;
  params?: unknown;
  /** rpc-flood: requests in flight at most; stream-flood: streams to open. */
  concurrency?: number;
  /** rpc-flood: stop after this many requests. */
  count?: number;
  /** rpc-flood: "__TEXT__" in the params becomes this many bytes of text (too big for a command line). */
  textBytes?: number;
  /** hostile-turns: the agent the turns go to, and the text that picks the hostile backend's mode. */
  agent?: string;
  text?: string;
}

type Summary = Record<string, number | string>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Attack 1: many connections, no credentials, each sending a declared 1 MB body a little at a time. */
async function slowBodies(options: Options): Promise<Summary> {
  const { port } = new URL(options.url);
  const wanted = options.connections ?? 1000;
  const deadline = Date.now() + options.durationMs;
  const open = new Set<Socket>();
  let opened = 0;
  let refused = 0;
  let answered401 = 0;
  let answered429 = 0;
  let closedByServer = 0;
  const chunk = Buffer.alloc(4096, 0x20);
  const openOne = (): void => {
    const socket = connect({ host: '127.0.0.1', port: Number(port), localAddress: options.localAddress });
    opened += 1;
    let established = false;
    let seen = '';
    socket.on('connect', () => {
      established = true;
      open.add(socket);
      socket.write('POST /a2a/jsonrpc HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: 1000000\r\n\r\n[');
    });
    socket.on('data', (data: Buffer) => {
      if (seen.length < 64) {
        seen += data.toString('latin1');
        if (seen.startsWith('HTTP/1.1 401')) answered401 += 1;
        if (seen.startsWith('HTTP/1.1 429')) answered429 += 1;
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      open.delete(socket);
      if (!established) refused += 1;
      else closedByServer += 1;
      // Keep the pressure on: replace every connection the gateway let go, until the end.
      if (Date.now() < deadline) setTimeout(openOne, 50);
    });
  };
  for (let i = 0; i < wanted; i++) {
    openOne();
    if (i % 100 === 99) await sleep(100);
  }
  let peak = 0;
  while (Date.now() < deadline) {
    for (const socket of open) if (socket.writable && socket.writableLength === 0) socket.write(chunk);
    peak = Math.max(peak, open.size);
    await sleep(250);
  }
  for (const socket of open) socket.destroy();
  return { opened, refused, answered401, answered429, closedByServer, peakOpen: peak };
}

/** A 1 MB JSON body of about 350,000 tiny values: structurally heavy for JSON.parse. */
function heavyBody(): string {
  const parts: string[] = [];
  let size = 0;
  while (size < 1_000_000) {
    parts.push('[1,2]');
    size += 6;
  }
  return `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"x","role":"ROLE_USER","parts":[{"data":[${parts.join(',')}]}]}}}`;
}

/** Attack 2: heavy bodies at a steady rate, without credentials (or with a valid token, 2b). */
async function heavyBodies(options: Options): Promise<Summary> {
  const body = heavyBody();
  const agent = new Agent({ keepAlive: true, maxSockets: 32, localAddress: options.localAddress });
  const statuses: Record<string, number> = {};
  const pending: Promise<void>[] = [];
  const intervalMs = 1000 / (options.perSecond ?? 15);
  const deadline = Date.now() + options.durationMs;
  while (Date.now() < deadline) {
    pending.push(
      new Promise<void>((resolve) => {
        const req = request(
          `${options.url}/a2a/jsonrpc`,
          {
            method: 'POST',
            agent,
            headers: {
              'Content-Type': 'application/json',
              'A2A-Version': '1.0',
              'Content-Length': String(Buffer.byteLength(body)),
              ...(options.token === undefined ? {} : { Authorization: `Bearer ${options.token}` }),
            },
          },
          (res) => {
            let text = '';
            res.on('data', (chunk: Buffer) => {
              if (text.length < 4096) text += chunk.toString();
            });
            res.on('end', () => {
              // JSON-RPC answers most errors in a 200: count those by their code.
              const code = /"code":(-?\d+)/.exec(text)?.[1];
              const key = res.statusCode === 200 && code !== undefined ? `200 ${code}` : String(res.statusCode);
              statuses[key] = (statuses[key] ?? 0) + 1;
              resolve();
            });
          },
        );
        req.on('error', (error: NodeJS.ErrnoException) => {
          statuses[error.code ?? 'error'] = (statuses[error.code ?? 'error'] ?? 0) + 1;
          resolve();
        });
        req.end(body);
      }),
    );
    await sleep(intervalMs);
  }
  await Promise.all(pending);
  agent.destroy();
  return { sent: pending.length, ...Object.fromEntries(Object.entries(statuses).map(([status, count]) => [`HTTP ${status}`, count])) };
}

/**
 * Attack 4: subscribers that never read. Three ask with a 1 MB JSON-RPC id (copied into every
 * frame before the fix); three with an ordinary id simply never read their stream.
 */
async function slowSubscribers(options: Options): Promise<Summary> {
  const taskIds = options.taskIds ?? [];
  const hugeId = 'i'.repeat(1_000_000);
  let refusedHugeIds = 0;
  let streamsOpened = 0;
  let streamsEndedByServer = 0;
  const sockets: Socket[] = [];
  const subscribe = (taskId: string, id: string): Promise<void> =>
    new Promise((resolve) => {
      const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'SubscribeToTask', params: { id: taskId } });
      const req = request(
        `${options.url}/a2a/jsonrpc`,
        {
          method: 'POST',
          agent: false,
          localAddress: options.localAddress,
          headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${options.token}`, 'Content-Length': String(Buffer.byteLength(body)) },
        },
        (res) => {
          if ((res.headers['content-type'] ?? '').includes('text/event-stream')) {
            streamsOpened += 1;
            res.pause(); // never read
            sockets.push(res.socket);
            res.socket.once('close', () => {
              streamsEndedByServer += 1;
            });
          } else {
            refusedHugeIds += 1;
            res.resume();
          }
          resolve();
        },
      );
      req.on('error', () => resolve());
      req.end(body);
    });
  for (const taskId of taskIds) {
    await subscribe(taskId, hugeId);
    await subscribe(taskId, `subscriber-${taskId}`);
  }
  await sleep(options.durationMs);
  const endedBeforeCleanup = streamsEndedByServer;
  for (const socket of sockets) socket.destroy();
  return { refusedHugeIds, streamsOpened, streamsEndedByServer: endedBeforeCleanup };
}

/** The reason an A2A error body names (google.rpc.ErrorInfo metadata.reason), if any. */
function reasonIn(text: string): string | undefined {
  // The gateway's own reason is in the ErrorInfo's metadata; the ErrorInfo's reason is the error's kind.
  return /"metadata":\{[^}]*"reason":"([A-Z_]+)"/.exec(text)?.[1] ?? /"reason":"([A-Z_]+)"/.exec(text)?.[1];
}

/**
 * Attacks 3, 5, 6 and 7: one JSON-RPC method called at a steady rate with at most `concurrency`
 * calls in flight, with a valid token. Tallies answers by status and reason, and the largest
 * response (read and counted, never kept).
 */
async function rpcFlood(options: Options): Promise<Summary> {
  const agent = new Agent({ keepAlive: true, maxSockets: options.concurrency ?? 8, localAddress: options.localAddress });
  const tally: Record<string, number> = {};
  let inFlight = 0;
  let sent = 0;
  let largestResponseBytes = 0;
  const pending: Promise<void>[] = [];
  const intervalMs = 1000 / (options.perSecond ?? 10);
  const deadline = Date.now() + options.durationMs;
  const template = JSON.stringify(options.params ?? {}).replace('__TEXT__', 'h'.repeat(options.textBytes ?? 0));
  const call = (n: number): Promise<void> =>
    new Promise<void>((resolve) => {
      const body = `{"jsonrpc":"2.0","id":${n},"method":${JSON.stringify(options.method)},"params":${template.replaceAll('__N__', `${process.pid}-${n}`)}}`;
      const token = options.tokens === undefined ? options.token : options.tokens[(n - 1) % options.tokens.length];
      const req = request(
        `${options.url}/a2a/jsonrpc`,
        {
          method: 'POST',
          agent,
          headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', 'Content-Length': String(Buffer.byteLength(body)), Authorization: `Bearer ${token}` },
        },
        (res) => {
          let bytes = 0;
          let head = '';
          res.on('data', (chunk: Buffer) => {
            bytes += chunk.length;
            if (head.length < 4096) head += chunk.toString();
          });
          res.on('end', () => {
            largestResponseBytes = Math.max(largestResponseBytes, bytes);
            const failed = /^\{"jsonrpc":"2.0","id":\d+,"error"/.test(head);
            const key = failed ? `${res.statusCode} ${reasonIn(head) ?? /"code":(-?\d+)/.exec(head)?.[1] ?? 'error'}` : `${res.statusCode}`;
            tally[key] = (tally[key] ?? 0) + 1;
            resolve();
          });
        },
      );
      req.on('error', (error: NodeJS.ErrnoException) => {
        tally[error.code ?? 'error'] = (tally[error.code ?? 'error'] ?? 0) + 1;
        resolve();
      });
      req.end(body);
    });
  while (Date.now() < deadline && (options.count === undefined || sent < options.count)) {
    if (inFlight < (options.concurrency ?? 8)) {
      sent += 1;
      inFlight += 1;
      pending.push(call(sent).finally(() => (inFlight -= 1)));
    }
    await sleep(intervalMs);
  }
  await Promise.all(pending);
  agent.destroy();
  return { sent, largestResponseKb: Math.round(largestResponseBytes / 1024), ...Object.fromEntries(Object.entries(tally).map(([key, count]) => [`HTTP ${key}`, count])) };
}

/** Attack 11: as many SubscribeToTask streams as the attacker can open (one task, a valid token), held open. */
async function streamFlood(options: Options): Promise<Summary> {
  const taskId = options.taskIds?.[0] ?? '';
  const wanted = options.concurrency ?? 300;
  const intervalMs = 1000 / (options.perSecond ?? 40);
  const tally: Record<string, number> = {};
  const sockets: Socket[] = [];
  const opening: Promise<void>[] = [];
  const subscribe = (): Promise<void> =>
    new Promise((resolve) => {
      const req = request(`${options.url}/a2a/rest/tasks/${taskId}:subscribe`, {
        agent: false,
        localAddress: options.localAddress,
        headers: { 'A2A-Version': '1.0', Authorization: `Bearer ${options.token}` },
      }, (res) => {
        if (res.statusCode === 200) {
          tally.open = (tally.open ?? 0) + 1;
          sockets.push(res.socket);
          res.resume();
          resolve();
          return;
        }
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => {
          const key = `${res.statusCode} ${reasonIn(text) ?? ''}`.trim();
          tally[key] = (tally[key] ?? 0) + 1;
          resolve();
        });
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        tally[error.code ?? 'error'] = (tally[error.code ?? 'error'] ?? 0) + 1;
        resolve();
      });
      req.end();
    });
  const deadline = Date.now() + options.durationMs;
  for (let i = 0; i < wanted && Date.now() < deadline; i++) {
    opening.push(subscribe());
    await sleep(intervalMs);
  }
  await Promise.all(opening);
  await sleep(Math.max(0, deadline - Date.now()));
  for (const socket of sockets) socket.destroy();
  return { attempted: opening.length, ...Object.fromEntries(Object.entries(tally).map(([key, count]) => [key === 'open' ? 'opened' : `HTTP ${key}`, count])) };
}

const ENDED = ['completed', 'failed', 'canceled', 'rejected', 'input_required'];

/**
 * Attacks 13 and 14: `count` tasks sent to a hostile backend's agent at once, each followed until
 * it ends or `durationMs` passes (then canceled, so its turn does not run on into the next
 * attack): each one's final state and the first words of its status message. Following reads
 * the task whole, tens of MB once a backend has poured into it.
 */
async function hostileTurns(options: Options): Promise<Summary> {
  const turns = Array.from({ length: options.count ?? 3 }, () => hostileTurn(options, options.text ?? ''));
  return { outcomes: (await Promise.all(turns)).join('; ') };
}

async function hostileTurn(options: Options, text: string): Promise<string> {
  const base = `${options.url}/agents/${options.agent ?? ''}/a2a/rest`;
  const headers = { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${options.token ?? ''}` };
  const sent = await fetch(`${base}/message:send`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ message: { messageId: `h-${Date.now()}-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }] }, configuration: { returnImmediately: true } }),
  }).catch((error: unknown) => error as Error);
  if (sent instanceof Error) return `send failed: ${sent.message}`;
  const task = ((await sent.json()) as { task?: { id: string } }).task;
  if (task === undefined) return `refused: ${sent.status}`;
  const statusOf = async (): Promise<{ state?: string; message?: { parts?: { text?: string }[] } } | undefined> => {
    const read = await fetch(`${base}/tasks/${task.id}?historyLength=0`, { headers }).catch(() => undefined);
    return read?.ok === true ? ((await read.json()) as { status?: { state?: string; message?: { parts?: { text?: string }[] } } }).status : undefined;
  };
  const until = Date.now() + options.durationMs;
  let state = 'unknown';
  let said = '';
  while (Date.now() < until) {
    const status = await statusOf();
    state = (status?.state ?? state).replace('TASK_STATE_', '').toLowerCase();
    said = status?.message?.parts?.[0]?.text ?? '';
    if (ENDED.includes(state)) break;
    await sleep(500);
  }
  if (!ENDED.includes(state)) {
    await fetch(`${base}/tasks/${task.id}:cancel`, { method: 'POST', headers }).catch(() => undefined);
    const canceledBy = Date.now() + 10_000;
    while (Date.now() < canceledBy) {
      const now = (await statusOf())?.state?.replace('TASK_STATE_', '').toLowerCase();
      if (now !== undefined && ENDED.includes(now)) return `${state}, then ${now} (the run canceled it)`;
      await sleep(500);
    }
  }
  return `${state}${said === '' ? '' : ` ("${said.slice(0, 200)}")`}`;
}

const attacks: Record<string, (options: Options) => Promise<Summary>> = {
  'rpc-flood': rpcFlood,
  'stream-flood': streamFlood,
  'slow-bodies': slowBodies,
  'heavy-bodies': heavyBodies,
  'slow-subscribers': slowSubscribers,
  'hostile-turns': hostileTurns,
};

const [name, json] = process.argv.slice(2);
const attack = attacks[name ?? ''];
if (attack === undefined || json === undefined) {
  process.stderr.write(`usage: attacker.ts <${Object.keys(attacks).join('|')}> '<json options>'\n`);
  process.exit(2);
}
const options = JSON.parse(json) as Options;
if (!/^http:\/\/(127\.\d+\.\d+\.\d+|localhost|\[::1\]):\d+$/.test(options.url)) {
  process.stderr.write('attacker.ts only targets loopback addresses\n');
  process.exit(2);
}
attack(options).then(
  (summary) => {
    // What the attack cost this machine beside the gateway: the processes share its cores.
    const { user, system } = process.cpuUsage();
    process.stdout.write(`${JSON.stringify({ ...summary, attackerCpuSeconds: Math.round((user + system) / 1e5) / 10 })}\n`);
    process.exit(0);
  },
  (error: unknown) => {
    process.stderr.write(`${String((error as Error).stack ?? error)}\n`);
    process.exit(1);
  },
);
