// The control plane of one process: its own two Redis connections (commands, and a subscriber
// for change notifications), the store, and the live view every role reads. Started once per
// process, before its roles (src/app/process.ts), and registered with the lifecycle: the process
// is not ready before the view holds the whole set, and the view stops after the roles.
import type { Lifecycle } from '../app/lifecycle.ts';
import { NOT_READY_STORE, type Readiness } from '../gateway/readiness.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { Logger } from '../logging/logger.ts';
import { openRedis, whenReady } from '../redis/connection.ts';
import { ControlStore } from '../store/control/control-store.ts';
import { ControlView } from './control-view.ts';
import { adoptUnindexedClaims } from './resource-claims.ts';

/**
 * How often each process compares the change sequence with its view's: the bound on a missed
 * notification's delay (changes normally arrive by pub/sub at once). Once a second keeps that
 * delay within the propagation bound and the view confirmed for readiness (CONTROL_FRESH_MS),
 * and is the one Redis call a second an idle process makes (docs/redis-slots.md).
 */
export const CONTROL_POLL_MS = 1_000;
/**
 * A view not confirmed against Redis for this long may have missed a change (the connection was
 * lost): the process is not ready until it has caught up. The propagation bound (1 s) itself.
 */
export const CONTROL_FRESH_MS = 1_000;
/** Longest a readiness check waits for Redis to confirm the view. */
const CONFIRM_TIMEOUT_MS = 750;
/** Most resources of all kinds; every process holds all of them. */
export const MAX_CONTROL_RESOURCES = 10_000;
/** Audit entries kept (about). */
export const AUDIT_KEPT = 10_000;

export interface ControlPlane {
  store: ControlStore;
  view: ControlView;
}

/** Ready once the view holds the whole set, and only while it is known to be current (a process that lost Redis catches up first). */
export async function controlReadiness(view: ControlView): Promise<Readiness> {
  if (!view.loaded) return { ready: false, reason: 'the control-plane resources are not loaded yet' };
  if (await view.current(CONTROL_FRESH_MS, CONFIRM_TIMEOUT_MS)) return { ready: true };
  // Redis did not answer (it would have brought the view up to date): the same cause, the same words, as the store's check.
  return { ready: false, reason: NOT_READY_STORE };
}

export async function startControlPlane(lifecycle: Lifecycle, config: GatewayConfig, logger: Logger): Promise<ControlPlane> {
  const commands = openRedis(config, 'commands', {}, { outageGraceMs: config.redisOutageGraceMs, commandTimeoutMs: config.redisCommandTimeoutMs });
  const subscriber = openRedis(config, 'events');
  for (const connection of [commands, subscriber]) connection.on('error', (error: Error) => logger.warn('control plane Redis connection error; reconnecting', { error: error.message }));
  const store = new ControlStore(commands, config.keyPrefix, { auditKept: AUDIT_KEPT, maxResources: MAX_CONTROL_RESOURCES });
  const view = new ControlView(store, logger);
  const close = async (): Promise<void> => {
    view.stop();
    subscriber.disconnect();
    await commands.quit().catch(() => undefined);
  };
  await lifecycle.start({
    name: 'control plane',
    async start() {
      try {
        await Promise.all([whenReady(commands), whenReady(subscriber)]);
        await view.start(subscriber, CONTROL_POLL_MS);
        adoptUnindexedClaims(store).catch((error: Error) => logger.warn('could not index the keyIds and issuers of resources stored before this version; writes are still checked against the view', { error: error.message }));
        // Back from a lost connection: catch up now rather than at the next poll.
        commands.on('ready', () => void view.refresh().catch(() => undefined));
      } catch (error) {
        await close();
        throw error;
      }
    },
    ready: () => controlReadiness(view),
    stop: close,
  });
  return { store, view };
}
