// SSRF: webhook URLs that would reach loopback, private, link-local (cloud metadata), CGNAT,
// multicast, unique-local addresses, or IPv6 forms carrying such an IPv4 address (IPv4-compatible,
// -mapped, -translated, NAT64, 6to4; Teredo outright) are refused when registered, and again
// when the connection is opened: a host name that resolved to a public address at registration
// and resolves to a blocked one later (DNS rebinding) never gets a request. The resolver is
// injected so the test decides what names resolve to; nothing goes to the internet.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PushResolver, ResolvedAddress } from '../src/push/receiver-policy.ts';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.ts';

const BLOCKED: [string, ResolvedAddress][] = [
  ['loopback', { address: '127.0.0.1', family: 4 }],
  ['loopback (other)', { address: '127.9.9.9', family: 4 }],
  ['private 10/8', { address: '10.0.0.7', family: 4 }],
  ['private 172.16/12', { address: '172.20.0.1', family: 4 }],
  ['private 192.168/16', { address: '192.168.1.10', family: 4 }],
  ['link-local / metadata', { address: '169.254.169.254', family: 4 }],
  ['CGNAT', { address: '100.64.1.1', family: 4 }],
  ['multicast', { address: '239.1.2.3', family: 4 }],
  ['unspecified', { address: '0.0.0.0', family: 4 }],
  ['IPv6 loopback', { address: '::1', family: 6 }],
  ['IPv4-mapped IPv6 loopback', { address: '::ffff:127.0.0.1', family: 6 }],
  ['IPv4-mapped IPv6 metadata', { address: '::ffff:169.254.169.254', family: 6 }],
  ['unique-local', { address: 'fd12:3456::1', family: 6 }],
  ['IPv6 link-local', { address: 'fe80::1', family: 6 }],
  ['IPv6 multicast', { address: 'ff02::1', family: 6 }],
];

/**
 * IPv6 forms that carry an IPv4 address, in dotted and hex notation: each is judged by the IPv4
 * address it carries, and the refusal names it (or says why the form is refused outright).
 */
const EMBEDDED: [string, ResolvedAddress, string][] = [
  ['IPv4-compatible loopback, dotted', { address: '::127.0.0.1', family: 6 }, '127.0.0.1, a loopback'],
  ['IPv4-compatible loopback, hex', { address: '::7f00:1', family: 6 }, '127.0.0.1, a loopback'],
  ['IPv4-compatible metadata, dotted', { address: '::169.254.169.254', family: 6 }, '169.254.169.254, a link-local'],
  ['IPv4-compatible private, hex', { address: '::a00:7', family: 6 }, '10.0.0.7, a private'],
  ['IPv4-mapped loopback, hex', { address: '::ffff:7f00:1', family: 6 }, '127.0.0.1, a loopback'],
  ['IPv4-mapped private, dotted', { address: '::ffff:192.168.1.10', family: 6 }, '192.168.1.10, a private'],
  ['IPv4-translated loopback, dotted', { address: '::ffff:0:127.0.0.1', family: 6 }, '127.0.0.1, a loopback'],
  ['IPv4-translated metadata, hex', { address: '::ffff:0:a9fe:a9fe', family: 6 }, '169.254.169.254, a link-local'],
  ['NAT64 loopback, dotted', { address: '64:ff9b::127.0.0.1', family: 6 }, '127.0.0.1, a loopback'],
  ['NAT64 loopback, hex', { address: '64:ff9b::7f00:1', family: 6 }, '127.0.0.1, a loopback'],
  ['NAT64 CGNAT, dotted', { address: '64:ff9b::100.64.1.1', family: 6 }, '100.64.1.1, a carrier-grade NAT'],
  ['NAT64 multicast, hex', { address: '64:ff9b::ef01:203', family: 6 }, '239.1.2.3, a multicast'],
  // 6to4 carries its IPv4 address in bits 16-47, which only hex notation writes.
  ['6to4 loopback', { address: '2002:7f00:1::1', family: 6 }, '127.0.0.1, a loopback'],
  ['6to4 metadata', { address: '2002:a9fe:a9fe::', family: 6 }, '169.254.169.254, a link-local'],
  ['local-use NAT64, dotted', { address: '64:ff9b:1::127.0.0.1', family: 6 }, 'local-use NAT64'],
  ['local-use NAT64, hex', { address: '64:ff9b:1::7f00:1', family: 6 }, 'local-use NAT64'],
  ['Teredo', { address: '2001:0:4136:e378:8000:63bf:3fff:fdd2', family: 6 }, 'obfuscated'],
];

const PUBLIC: ResolvedAddress = { address: '93.184.215.14', family: 4 };

/** Names answer per call: `answers[i]` for the i-th lookup of the name, the last one after that. */
const scripted = new Map<string, ResolvedAddress[][]>();
const calls = new Map<string, number>();
const resolver: PushResolver = async (hostname) => {
  const answers = scripted.get(hostname);
  if (answers === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  const n = calls.get(hostname) ?? 0;
  calls.set(hostname, n + 1);
  return answers[Math.min(n, answers.length - 1)] as ResolvedAddress[];
};

let gw: TestGateway;
let receiver: WebhookReceiver;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  scripted.set('receiver.test', [[{ address: '127.0.0.1', family: 4 }]]);
  gw = await startTestGateway({
    name: 'pushssrf',
    pushResolver: resolver,
    // Only this name may reach loopback; every other way to 127.0.0.1 stays blocked.
    config: { push: { allowedHosts: ['receiver.test'], sweepIntervalMs: 200, retryInitialDelayMs: 100, retryMaxDelayMs: 200, retryHorizonMs: 1_500 } },
  });
});

afterAll(async () => {
  await receiver?.close();
  await gw?.close();
});

/** A task; `running` leaves it working for a while, so a config added now has events to send. */
async function newTask(text = 'echo ssrf', running = false): Promise<string> {
  const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(running ? 'long 20' : text), ...(running ? { configuration: { returnImmediately: true } } : {}) });
  return (body.result as { task: { id: string } }).task.id;
}

async function register(taskId: string, url: string): Promise<{ error?: { code: number; message: string; data: unknown } }> {
  return (await rpc(gw.jsonRpcUrl, 'CreateTaskPushNotificationConfig', { taskId, url })).body as never;
}

const literal = (a: ResolvedAddress): string => (a.family === 6 ? `[${a.address}]` : a.address);

describe('SSRF at registration', () => {
  it.each(BLOCKED)('refuses a literal %s address', async (_what, address) => {
    const taskId = await newTask();
    const reply = await register(taskId, `http://${literal(address)}:${receiver.port}/hook`);
    expect(reply.error?.code).toBe(-32602);
    expect(JSON.stringify(reply.error)).toContain('PUSH_URL_ADDRESS_BLOCKED');
    expect(await gw.redis.exists(`${gw.prefix}:{${taskId}}:push`)).toBe(0);
  });

  it.each(BLOCKED)('refuses a host name resolving to a %s address', async (what, address) => {
    const name = `blocked-${what.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}.test`;
    scripted.set(name, [[address]]);
    const reply = await register(await newTask(), `https://${name}/hook`);
    expect(reply.error?.code).toBe(-32602);
    expect(reply.error?.message).toContain(address.address);
  });

  it('refuses other schemes and unresolvable hosts', async () => {
    const taskId = await newTask();
    expect(JSON.stringify(await register(taskId, 'file:///etc/passwd'))).toContain('PUSH_URL_SCHEME');
    expect(JSON.stringify(await register(taskId, 'gopher://receiver.test/x'))).toContain('PUSH_URL_SCHEME');
    expect(JSON.stringify(await register(taskId, 'http://nowhere.test/x'))).toContain('PUSH_URL_UNRESOLVABLE');
  });
});

describe('SSRF at connect time (DNS rebinding)', () => {
  it.each(BLOCKED)('a name public at registration and %s at delivery gets no request and is dead-lettered', async (what, address) => {
    const name = `rebind-${what.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}.test`;
    // First lookup (registration): public. Every later one (the connect hook): the blocked address.
    scripted.set(name, [[PUBLIC], [address]]);
    const taskId = await newTask('', true);
    const path = `/rebind/${taskId}`;
    expect((await register(taskId, `http://${name}:${receiver.port}${path}`)).error).toBeUndefined();
    const events = await gw.redis.xlen(`${gw.prefix}:{${taskId}}:events`);
    const letter = await waitFor(async () => {
      const { body } = await rpc(gw.jsonRpcUrl, 'ListPushDeadLetters', { taskId });
      return (body.result as { deadLetters: { lastError: string; attempts: number }[] }).deadLetters[0];
    }, 10_000, 'the blocked delivery to be dead-lettered');
    expect(events).toBeGreaterThan(0);
    expect(letter.lastError).toContain(address.address);
    expect(letter.attempts).toBe(1); // a blocked address is not retried
    expect(calls.get(name)).toBeGreaterThanOrEqual(2);
    expect(receiver.deliveries.filter((d) => d.path === path)).toEqual([]);
  });

  it('an allow-listed host reaches the loopback receiver', async () => {
    const path = `/allowed/${Date.now()}`;
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', {
      message: textMessage('stream allowed to pass'),
      configuration: { taskPushNotificationConfig: { url: `http://receiver.test:${receiver.port}${path}-2` } },
    });
    const second = (body.result as { task: { id: string } }).task.id;
    const stored = await gw.redis.xlen(`${gw.prefix}:{${second}}:events`);
    const got = await receiver.waitForAccepted(stored, `${path}-2`);
    expect(got).toHaveLength(stored);
  });
});

describe('IPv6 forms that carry an IPv4 address', () => {
  it.each(EMBEDDED)('refuses a literal %s address, naming what it carries', async (_what, address, why) => {
    const taskId = await newTask();
    const reply = await register(taskId, `http://[${address.address}]:${receiver.port}/hook`);
    expect(reply.error?.code).toBe(-32602);
    expect(JSON.stringify(reply.error)).toContain('PUSH_URL_ADDRESS_BLOCKED');
    expect(reply.error?.message).toContain(why);
    expect(await gw.redis.exists(`${gw.prefix}:{${taskId}}:push`)).toBe(0);
  });

  it.each(EMBEDDED)('refuses a host name resolving to a %s address', async (what, address, why) => {
    const name = `embedded-${what.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}.test`;
    scripted.set(name, [[address]]);
    const reply = await register(await newTask(), `https://${name}/hook`);
    expect(reply.error?.code).toBe(-32602);
    expect(reply.error?.message).toContain(address.address);
    expect(reply.error?.message).toContain(why);
  });

  it.each(EMBEDDED.filter((_, i) => i % 2 === 0))('HTTP+JSON refuses a literal %s address with a 400 problem', async (_what, address, why) => {
    const taskId = await newTask();
    const response = await fetch(`${gw.restUrl}/tasks/${taskId}/pushNotificationConfigs`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({ url: `https://[${address.address}]/hook` }),
    });
    expect(response.status).toBe(400);
    const { error } = (await response.json()) as { error: { status: string; message: string } };
    expect(error.status).toBe('INVALID_ARGUMENT');
    expect(error.message).toContain(why);
    expect(JSON.stringify(error)).toContain('PUSH_URL_ADDRESS_BLOCKED');
    expect(await gw.redis.exists(`${gw.prefix}:{${taskId}}:push`)).toBe(0);
  });

  it.each(EMBEDDED)('a name public at registration and %s at delivery gets no request and is dead-lettered', async (what, address, why) => {
    const name = `rebind-embedded-${what.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}.test`;
    scripted.set(name, [[PUBLIC], [address]]);
    const taskId = await newTask('', true);
    const path = `/rebind-embedded/${taskId}`;
    expect((await register(taskId, `http://${name}:${receiver.port}${path}`)).error).toBeUndefined();
    const letter = await waitFor(async () => {
      const { body } = await rpc(gw.jsonRpcUrl, 'ListPushDeadLetters', { taskId });
      return (body.result as { deadLetters: { lastError: string; attempts: number }[] }).deadLetters[0];
    }, 10_000, 'the blocked delivery to be dead-lettered');
    expect(letter.lastError).toContain(address.address);
    expect(letter.lastError).toContain(why);
    expect(letter.attempts).toBe(1);
    expect(receiver.deliveries.filter((d) => d.path === path)).toEqual([]);
  });

  it.each(['[::93.184.215.14]', '[::ffff:0:5db8:d70e]', '[64:ff9b::93.184.215.14]', '[64:ff9b::5db8:d70e]', '[2002:5db8:d70e::1]'])(
    'accepts %s, which carries a public IPv4 address, as it accepts that address written plainly',
    async (host) => {
      const taskId = await newTask();
      const reply = await register(taskId, `https://${host}/hook`);
      expect(reply.error).toBeUndefined();
      await rpc(gw.jsonRpcUrl, 'DeleteTaskPushNotificationConfig', { taskId, id: (reply as { result?: { id: string } }).result?.id });
    },
  );
});
