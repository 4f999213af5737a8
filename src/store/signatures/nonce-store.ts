import type { RedisClient } from '../../redis/connection.ts';

/**
 * Nonces of signed requests already seen, per partner. Shared by every gateway on the same
 * Redis, so a request replayed against another gateway instance is caught too.
 */
export class NonceStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keyPrefix: string,
  ) {}

  key(partnerId: string, nonce: string): string {
    return `${this.keyPrefix}:nonce:${partnerId}:${nonce}`;
  }

  /**
   * True the first time a partner uses this nonce within ttlMs, false on any later use. A single
   * SET NX makes check-and-record atomic, so two copies of a request racing each other across
   * gateways cannot both win.
   */
  async claim(partnerId: string, nonce: string, ttlMs: number): Promise<boolean> {
    const result = await this.redis.set(this.key(partnerId, nonce), '1', 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX');
    return result === 'OK';
  }
}
