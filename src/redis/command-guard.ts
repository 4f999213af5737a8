// The size guard of every connection openRedis makes: a command whose arguments add up to more
// than redisMaxCommandBytes is refused before ioredis queues it. Past Redis's own bulk limit
// (proto-max-bulk-len, 512 MB) Redis would refuse it anyway, but ioredis builds the command as
// one string first, and inside auto-pipelining that build runs in a callback no caller awaits:
// its RangeError ("Invalid string length") escaped as an uncaught exception and ended the
// process. Refused here, the command's own promise rejects with a typed error instead.
import { list as redisCommands } from '@ioredis/commands';
import type { Cluster, Redis } from 'ioredis';
import { noteLimitRefusal } from '../limits/limit-refusal.ts';

/** Default of `redisMaxCommandBytes`: half of Redis's proto-max-bulk-len, well below a JavaScript string's limit. */
export const DEFAULT_REDIS_MAX_COMMAND_BYTES = 256 * 1024 * 1024;

export class RedisCommandTooLargeError extends Error {
  override readonly name = 'RedisCommandTooLargeError';

  constructor(
    readonly command: string,
    readonly bytes: number,
    readonly maxBytes: number,
  ) {
    super(
      `A Redis command (${command}) of at least ${bytes} bytes was refused before it was sent: larger than redisMaxCommandBytes (${maxBytes} bytes, A2A_REDIS_MAX_COMMAND_BYTES). Nothing was written. ` +
        'Bound what is stored (limits.maxArtifactBytes, limits.maxTurnOutputBytes, limits.maxTaskOutputBytes) rather than raising it.',
    );
    noteLimitRefusal('redisMaxCommandBytes');
  }
}

export const isRedisCommandTooLargeError = (error: unknown): error is RedisCommandTooLargeError => error instanceof RedisCommandTooLargeError;

/**
 * Bytes of a command's arguments, stopping once past `max` (the rest need not be measured).
 * Strings count as UTF-8; an argument ioredis flattens (arrays, objects of HSET) counts its parts.
 */
export function commandBytes(args: readonly unknown[], max: number): number {
  let total = 0;
  const stack: unknown[] = [...args];
  while (stack.length > 0 && total <= max) {
    const arg = stack.pop();
    if (typeof arg === 'string') total += Buffer.byteLength(arg);
    else if (Buffer.isBuffer(arg)) total += arg.length;
    else if (typeof arg === 'number' || typeof arg === 'bigint' || typeof arg === 'boolean') total += 24;
    else if (Array.isArray(arg)) stack.push(...(arg as unknown[]));
    else if (arg instanceof Map) for (const [key, value] of arg) stack.push(key, value);
    else if (typeof arg === 'object' && arg !== null) for (const [key, value] of Object.entries(arg)) stack.push(key, value);
  }
  return total;
}

/**
 * Whether flat arguments (strings, buffers, numbers) certainly fit in `max` bytes, without
 * measuring a string's UTF-8: a UTF-16 unit is at most three bytes. False when unsure (any other
 * argument, or a bound past `max`): commandBytes then measures.
 */
function surelyFits(args: readonly unknown[], max: number): boolean {
  let bound = 0;
  for (const arg of args) {
    if (typeof arg === 'string') bound += arg.length * 3;
    else if (typeof arg === 'number') bound += 24;
    else if (Buffer.isBuffer(arg)) bound += arg.length;
    else return false;
  }
  return bound <= max;
}

type CommandFunction = (...args: unknown[]) => unknown;

/** Names of the scripts run by EVALSHA, by SHA1 (src/store/scripts.ts): a refusal names the script, not "evalsha". */
const scriptNames = new Map<string, string>();

export function labelScript(sha: string, name: string): void {
  scriptNames.set(sha, name);
}

function commandName(name: string, args: readonly unknown[]): string {
  if (name === 'call' || name === 'send_command') return String(args[0]);
  if (name === 'evalsha' || name === 'evalshaBuffer') return scriptNames.get(String(args[0])) ?? name;
  return name;
}

/** Wraps one command method of `client` so its arguments are measured before it runs. */
function guardMethod(client: Redis | Cluster, name: string, maxBytes: number): void {
  const target = client as unknown as Record<string, unknown>;
  const original = target[name];
  if (typeof original !== 'function') return;
  const run = original as CommandFunction;
  target[name] = function guarded(this: unknown, ...args: unknown[]): unknown {
    const callback = typeof args[args.length - 1] === 'function' ? (args[args.length - 1] as (error: Error) => void) : undefined;
    const measured = callback === undefined ? args : args.slice(0, -1);
    if (surelyFits(measured, maxBytes)) return run.apply(this, args);
    const bytes = commandBytes(measured, maxBytes);
    if (bytes <= maxBytes) return run.apply(this, args);
    const error = new RedisCommandTooLargeError(commandName(name, args), bytes, maxBytes);
    const refused = Promise.reject(error);
    if (callback !== undefined) {
      // Callback style: the callback gets the error, and the promise returned alongside is not left unhandled.
      refused.catch(() => undefined);
      process.nextTick(callback, error);
    }
    return refused;
  };
}

/**
 * Puts the size guard on every command method of `client`, and on the scripts defineCommand
 * adds to it later. Commands queued in an explicit pipeline or multi are not measured one by
 * one; the gateway's pipelines carry small index updates only.
 */
export function guardCommands(client: Redis | Cluster, maxBytes: number): void {
  for (const name of [...redisCommands, 'call', 'send_command']) {
    guardMethod(client, name, maxBytes);
    guardMethod(client, `${name}Buffer`, maxBytes);
  }
  const define = client.defineCommand.bind(client);
  client.defineCommand = ((name: string, definition: Parameters<Redis['defineCommand']>[1]) => {
    define(name, definition);
    guardMethod(client, name, maxBytes);
    guardMethod(client, `${name}Buffer`, maxBytes);
  }) as Redis['defineCommand'];
}
