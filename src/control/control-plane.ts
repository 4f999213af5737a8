// The control plane of one process: its own two Redis connections (commands, and a subscriber
// for change notifications), the store, and the live view every role reads. Started once per
// process, before its roles (src/app/process.ts), and registered with the lifecycle: the process
// is not ready before the view holds the whole set, and the view stops after the roles.
import type { Lifecycle } from '../app/lifecycle.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { Logger } from '../logging/logger.ts';
import { openRedis, whenReady } from '../redis/connection.ts';
import { ControlStore } from '../store/control/control-store.ts';
import { ControlView } from './control-view.ts';

/** How often each process compares the change sequence with its view's: the bound on a missed notification's delay. */
export const CONTROL_POLL_MS = 250;
/** Most resources of all kinds; every process holds all of them. */
export const MAX_CONTROL_RESOURCES = 10_000;
/** Audit entries kept (about). */
export const AUDIT_KEPT = 10_000;

export interface ControlPlane {
  store: ControlStore;
  view: ControlView;
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
      } catch (error) {
        await close();
        throw error;
      }
    },
    ready: () => Promise.resolve(view.loaded ? { ready: true } : { ready: false, reason: 'the control-plane resources are not loaded yet' }),
    stop: close,
  });
  return { store, view };
}
