// Bounds on client connections, so that no client can take the file descriptors the gateway
// needs for Redis and for the clients already connected: a total cap (Node's maxConnections:
// sockets past it are closed as they are accepted) and an optional cap per client address.
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../logging/logger.ts';
import { noteLimitRefusal, type LimitName } from '../limits/limit-refusal.ts';

/** Descriptors kept for everything that is not a client connection: Redis, files, the listener. */
const RESERVED_DESCRIPTORS = 128;
const FALLBACK_MAX_CONNECTIONS = 10_000;

/** The default of maxConnections: the open-file limit (soft) minus what the process needs besides. */
export function defaultMaxConnections(limitsFile = '/proc/self/limits'): number {
  try {
    const line = readFileSync(limitsFile, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = line === undefined ? Number.NaN : Number(line.slice('Max open files'.length).trim().split(/\s+/)[0]);
    if (Number.isFinite(soft)) return Math.max(16, soft - RESERVED_DESCRIPTORS);
  } catch {
    // Not Linux: no cheap way to read the limit.
  }
  return FALLBACK_MAX_CONNECTIONS;
}

export interface ConnectionGuardOptions {
  maxConnections: number;
  /** 0 = no per-address cap. */
  maxConnectionsPerAddress: number;
  /** Connections from trusted proxies carry many clients: they are not counted per address. */
  isTrustedProxy: (address: string) => boolean;
  logger: Logger;
}

export function guardConnections(server: Server, options: ConnectionGuardOptions): void {
  server.maxConnections = options.maxConnections;
  let droppedSinceLog = 0;
  let logTimer: NodeJS.Timeout | undefined;
  const noteDropped = (limit: LimitName, why: string): void => {
    noteLimitRefusal(limit);
    droppedSinceLog += 1;
    // One line per second at most, however many connections are refused.
    logTimer ??= setTimeout(() => {
      options.logger.warn('refused client connections', { count: droppedSinceLog, why });
      droppedSinceLog = 0;
      logTimer = undefined;
    }, 1_000).unref();
  };
  server.on('drop', () => noteDropped('maxConnections', `maxConnections (${options.maxConnections}) reached`));
  if (options.maxConnectionsPerAddress <= 0) return;
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    if (options.isTrustedProxy(address)) return;
    const count = (open.get(address) ?? 0) + 1;
    if (count > options.maxConnectionsPerAddress) {
      socket.destroy();
      noteDropped('maxConnectionsPerAddress', `maxConnectionsPerAddress (${options.maxConnectionsPerAddress}) reached`);
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left <= 0) open.delete(address);
      else open.set(address, left);
    });
  });
}
