// A lock one process of many holds for a while (a sweep, a reconcile pass): taken with SET NX
// and an expiry, so a holder that dies frees it by itself, and given back only by its holder
// (the releaseLock script), so a holder whose lock lapsed never frees the one another took since.
// Callers get a lock from the store object that owns its key, never the key.
import type { RedisClient } from '../redis/connection.ts';
import { newId } from '../ids.ts';
import { releaseLockScript } from './maintenance-scripts.ts';
import type { ScriptCaller } from './script-call.ts';

export class RedisLock {
  /**
   * @param call the owning store object's script caller (on `redis`).
   * @param token who holds it: one per holder (a process, or one sweeper of a process).
   */
  constructor(
    private readonly redis: RedisClient,
    private readonly call: ScriptCaller,
    private readonly key: string,
    readonly token: string = newId(),
  ) {}

  /** Takes the lock for `ttlMs` unless another holder has it; false then. */
  async tryLock(ttlMs: number): Promise<boolean> {
    return (await this.redis.set(this.key, this.token, 'PX', ttlMs, 'NX')) !== null;
  }

  /** Gives the lock back if this holder still has it; false when it had lapsed (and maybe been taken by another). */
  async release(): Promise<boolean> {
    return this.call(releaseLockScript, { lock: this.key }, { token: this.token });
  }
}
