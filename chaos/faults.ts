// The fault injector: at random moments, one fault at a time, SIGKILL a random worker, SIGKILL
// a random gateway, or crash Redis. A killed role is replaced at once (a new process, a new
// port for a gateway); Redis comes back on the same port and data directory after a short
// outage. On a Redis Cluster the Redis fault is a master's SIGKILL: its replica is promoted,
// and the killed node comes back after the outage as a new node replicating the promoted one.
// One at a time keeps every fault attributable and leaves at least one gateway up. With
// overlapRespawns (the hour's run) the next fault does not wait for the replacement to be
// ready: a start takes seconds on a loaded machine, which would cap an hour at a few hundred
// kills. Nor, on a Cluster, for a killed master's down period and rejoin (2–4 s with its full
// sync, under load): the loop waits only for the failover, and the next master kill waits for
// the rejoin, so never more than one master is down (a second kill while a shard has no
// replica loses it).
import { setTimeout as sleep } from 'node:timers/promises';
import type { ProcessGroup, Role } from './processes.ts';
import type { Random } from './random.ts';
import type { RedisServer } from './redis-server.ts';
import type { ChaosCluster } from './redis-cluster.ts';
import type { FaultCounts } from './report.ts';

export type FaultKind = 'worker' | 'gateway' | 'redis';

export interface FaultInjectorOptions {
  group: ProcessGroup;
  /** What the Redis fault hits: the single Redis (crash and restart) or a Cluster (a master's kill and failover). */
  redis: { server: RedisServer } | { cluster: ChaosCluster };
  random: Random;
  /** How many of each role should be running; a replacement is started after each kill. */
  targets: Record<Role, number>;
  /** Pause before each fault, uniform in [min, max] ms. */
  pauseMs: [number, number];
  /** Faults after the first three (one of each kind) are drawn from this list; repeat a kind to weigh it. */
  mix: readonly FaultKind[];
  /** How long Redis stays down, uniform in [min, max] ms. */
  redisDownMs: [number, number];
  /**
   * PIDs of workers holding a task's lease right now. A worker kill picks among these when
   * there are any: killing an idle worker tests nothing, and at a steady load most workers
   * are idle at any given instant.
   */
  busyWorkerPids?: () => Promise<Set<number>>;
  /**
   * Start replacements in the background, so faults keep their pace while a process starts; on
   * a Cluster, also a killed master's down period and rejoin (one master down at a time still).
   */
  overlapRespawns?: boolean;
  log: (line: string) => void;
}

export class FaultInjector {
  readonly counts: FaultCounts = { workerKills: 0, gatewayKills: 0, redisRestarts: 0, masterKills: 0, slowestFailoverMs: 0 };
  private stopped = false;
  private replenishing: Promise<void> | undefined;
  /** A killed master's down period and rejoin, running in the background (overlapRespawns). */
  private rejoining: Promise<void> | undefined;
  private rejoinFailure: Error | undefined;

  constructor(private readonly options: FaultInjectorOptions) {}

  /**
   * Injects faults until `shouldStop()` says the load is over AND one fault of each kind has
   * happened (the first three are the three kinds in a seeded order), or until the deadline.
   */
  async run(shouldStop: () => boolean, deadline: number): Promise<void> {
    const { random } = this.options;
    const first: FaultKind[] = ['worker', 'gateway', 'redis'];
    for (let i = first.length - 1; i > 0; i--) {
      const j = random.int(0, i);
      [first[i], first[j]] = [first[j] as FaultKind, first[i] as FaultKind];
    }
    try {
      for (let n = 0; n < 10_000 && Date.now() < deadline; n++) {
        if (this.stopped || (shouldStop() && n >= first.length)) return;
        await sleep(random.int(...this.options.pauseMs));
        this.throwIfRejoinFailed();
        if (this.stopped) return;
        const kind = first[n] ?? random.pick(this.options.mix);
        await this.inject(kind);
        if (this.options.overlapRespawns === true) this.replenishInBackground();
        else await this.replenish();
      }
    } finally {
      // The report and the teardown need the whole cluster back, and no rejoin racing its stop.
      await this.masterRejoined();
    }
    await this.replenishing;
  }

  /** Waits for a killed master's rejoin running in the background; throws if it failed. */
  private async masterRejoined(): Promise<void> {
    await this.rejoining;
    this.throwIfRejoinFailed();
  }

  private throwIfRejoinFailed(): void {
    if (this.rejoinFailure !== undefined) throw this.rejoinFailure;
  }

  /** One background replenisher at a time; it runs until every role is at its target again. */
  private replenishInBackground(): void {
    if (this.replenishing !== undefined) return;
    this.replenishing = this.replenish()
      .catch((error: unknown) => this.options.log(`replenishing failed: ${(error as Error).message}`))
      .finally(() => {
        this.replenishing = undefined;
      });
  }

  /** Ends the run loop after the fault in progress (used when the run is torn down early). */
  stop(): void {
    this.stopped = true;
  }

  private async inject(kind: FaultKind): Promise<void> {
    const { group, random, log } = this.options;
    if (kind === 'redis' && 'cluster' in this.options.redis) {
      const { cluster } = this.options.redis;
      // One master down at a time: the previous one's rejoin first.
      await this.masterRejoined();
      const down = random.int(...this.options.redisDownMs);
      const { port, failoverMs } = await cluster.killMaster(random);
      this.counts.masterKills += 1;
      this.counts.slowestFailoverMs = Math.max(this.counts.slowestFailoverMs, failoverMs);
      log(`SIGKILL Redis master on port ${port}: its replica serves its slots after ${failoverMs} ms; down for ${down} ms`);
      const rejoin = async (): Promise<void> => {
        await sleep(down);
        const started = Date.now();
        await cluster.restartKilled();
        log(`node on port ${port} is back as a new node, a replica in sync (rejoin took ${Date.now() - started} ms)`);
      };
      if (this.options.overlapRespawns !== true) return rejoin();
      this.rejoining = rejoin()
        .catch((error: unknown) => {
          this.rejoinFailure = error instanceof Error ? error : new Error(String(error));
          log(`rejoin of the node on port ${port} failed: ${this.rejoinFailure.message}`);
        })
        .finally(() => {
          this.rejoining = undefined;
        });
      return;
    }
    if (kind === 'redis' && 'server' in this.options.redis) {
      const { server } = this.options.redis;
      const down = random.int(...this.options.redisDownMs);
      log(`SIGKILL redis-server (down for ${down} ms)`);
      await server.crash();
      this.counts.redisRestarts += 1;
      await sleep(down);
      await server.start();
      log('redis-server is back (AOF reloaded)');
      return;
    }
    const role: Role = kind === 'worker' ? 'worker' : 'serve';
    const alive = group.alive(role);
    // While replacements start in the background, the last gateway up is not killed: the load
    // needs one to answer (a kill of every gateway at once is an outage, not a crash to recover).
    if (alive.length < (this.options.overlapRespawns === true && role === 'serve' ? 2 : 1)) return;
    let candidates = alive;
    // Wait (bounded: 2 s) for a moment when some worker is running a turn.
    for (let poll = 0; kind === 'worker' && this.options.busyWorkerPids !== undefined && poll < 40; poll++) {
      const busy = await this.options.busyWorkerPids().catch(() => new Set<number>());
      const working = alive.filter((w) => busy.has(w.pid));
      if (working.length > 0) {
        candidates = working;
        break;
      }
      await sleep(50);
    }
    const victim = random.pick(candidates);
    log(`SIGKILL ${victim.name} (pid ${victim.pid}${candidates === alive ? '' : ', holds a lease'})`);
    await victim.kill('SIGKILL');
    if (kind === 'worker') this.counts.workerKills += 1;
    else this.counts.gatewayKills += 1;
  }

  /** Brings every role back to its target count (also after a process died on its own). */
  async replenish(): Promise<void> {
    const { group, targets, log } = this.options;
    // Every missing process starts at once; counted again after: one may be killed meanwhile.
    for (;;) {
      const starts = (['serve', 'worker'] as const).flatMap((role) => Array.from({ length: Math.max(0, targets[role] - group.alive(role).length) }, () => role));
      if (starts.length === 0) return;
      await Promise.all(
        starts.map(async (role) => {
          const started = await group.spawnWithRetry(role);
          log(`started ${started.name} (pid ${started.pid})${started.url === '' ? '' : ` at ${started.url}`}`);
        }),
      );
    }
  }
}
