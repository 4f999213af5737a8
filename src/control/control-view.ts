// Every process's copy of the control-plane resources, kept current two ways: a change
// notification (pub/sub) reloads at once, and the change sequence is polled, so a missed
// message, a reconnect or a restart of Redis costs at most one poll interval. A reload reads
// every resource in one script (one consistent picture at one sequence number); the set is
// small (bounded by maxResources) and changes rarely, so a full read is simpler and safer than
// replaying single changes. The process reports ready only once the first load is in.
import type { Logger } from '../logging/logger.ts';
import type { RedisClient } from '../redis/connection.ts';
import type { ControlStore } from '../store/control/control-store.ts';
import { isResourceKind, type ResourceKind } from './resource-kinds.ts';
import type { ControlResource, StoredResource } from './resource.ts';

export type ViewListener = (view: ControlView) => void;

export class ControlView {
  private byKind = new Map<ResourceKind, Map<string, ControlResource>>();
  private loadedSeq = -1;
  private readonly listeners: ViewListener[] = [];
  private reloading: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  /** When the view was last found current against Redis (a reload, or a poll that saw its sequence). */
  private confirmedAt = 0;

  constructor(
    private readonly store: ControlStore,
    private readonly logger: Logger,
  ) {}

  /** True once the first load is in: the process may serve. */
  get loaded(): boolean {
    return this.loadedSeq >= 0;
  }

  /** The change sequence the view is current at (-1 before the first load). */
  get seq(): number {
    return this.loadedSeq;
  }

  list<K extends ResourceKind>(kind: K): ControlResource<K>[] {
    return [...(this.byKind.get(kind)?.values() ?? [])] as ControlResource<K>[];
  }

  get<K extends ResourceKind>(kind: K, name: string): ControlResource<K> | undefined {
    return this.byKind.get(kind)?.get(name) as ControlResource<K> | undefined;
  }

  /**
   * Whether the view is known to hold every change: confirmed against Redis within `maxAgeMs`,
   * or now, by reading the sequence (and reloading when it moved) within `timeoutMs`. A process
   * that lost Redis for longer may have missed changes: it is not ready until this is true again.
   */
  async current(maxAgeMs: number, timeoutMs: number): Promise<boolean> {
    if (!this.loaded) return false;
    if (Date.now() - this.confirmedAt <= maxAgeMs) return true;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    try {
      return await Promise.race([this.check().then(() => true, () => false), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Calls `listener` after every load that changed something (and now, when loaded). */
  onChange(listener: ViewListener): void {
    this.listeners.push(listener);
    if (this.loaded) this.notify(listener);
  }

  /** Loads the whole set; subscribes to changes on `subscriber` and polls the sequence every `pollMs`. */
  async start(subscriber: RedisClient, pollMs: number): Promise<void> {
    await this.refresh();
    await this.store.subscribe(subscriber, () => void this.refresh().catch((error: Error) => this.logger.warn('control plane reload failed; the next poll retries', { error: error.message })));
    this.timer = setInterval(() => void this.poll(), pollMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Reloads unless a reload is running; then one more runs after it, so a change seen during one is never missed. */
  refresh(): Promise<void> {
    if (this.reloading !== undefined) {
      this.again = true;
      return this.reloading;
    }
    this.reloading = (async () => {
      try {
        do {
          this.again = false;
          await this.reload();
        } while (this.again);
      } finally {
        this.reloading = undefined;
      }
    })();
    return this.reloading;
  }

  /** Resolves once the view has every change up to `seq` (a write's own, before its answer). */
  async catchUp(seq: number): Promise<void> {
    try {
      for (let attempt = 0; attempt < 5 && this.loadedSeq < seq; attempt++) await this.refresh();
    } catch (error) {
      // The write is durable already; the next poll brings it in. Its answer must not say it failed.
      this.logger.warn('control plane reload after a write failed; the next poll retries', { error: (error as Error).message });
    }
  }

  /** Compares the sequence with the view's, reloading when it moved; throws when Redis does not answer. */
  private async check(): Promise<void> {
    const askedAt = Date.now();
    if ((await this.store.sequence()) !== this.loadedSeq) await this.refresh();
    else this.confirmedAt = Math.max(this.confirmedAt, askedAt);
  }

  private async poll(): Promise<void> {
    try {
      await this.check();
    } catch (error) {
      this.logger.debug('control plane poll failed; retried at the next interval', { error: (error as Error).message });
    }
  }

  private async reload(): Promise<void> {
    const askedAt = Date.now();
    const { seq, resources } = await this.store.readAll();
    this.confirmedAt = Math.max(this.confirmedAt, askedAt);
    if (seq === this.loadedSeq) return;
    const byKind = new Map<ResourceKind, Map<string, ControlResource>>();
    for (const { field, json, version } of resources) {
      let stored: StoredResource;
      try {
        stored = JSON.parse(json) as StoredResource;
      } catch {
        this.logger.error('a control-plane resource in Redis is not JSON; it is ignored until it is written again', { field });
        continue;
      }
      if (!isResourceKind(stored.kind)) continue;
      let names = byKind.get(stored.kind);
      if (names === undefined) byKind.set(stored.kind, (names = new Map()));
      names.set(stored.name, { ...stored, version });
    }
    this.byKind = byKind;
    this.loadedSeq = seq;
    for (const listener of this.listeners) this.notify(listener);
  }

  private notify(listener: ViewListener): void {
    try {
      listener(this);
    } catch (error) {
      this.logger.error('applying the control-plane resources failed; the previous ones stay in effect', { error: (error as Error).message });
    }
  }
}
