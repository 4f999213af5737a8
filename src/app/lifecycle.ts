// One lifecycle per process (or per role started on its own): every component registers its
// hooks once, as it starts, and the lifecycle runs them. Readiness asks each component in turn;
// a shutdown first drains (not ready, still serving, in the order the components started), then
// stops them in reverse order, so whatever a component uses is still there while it stops. A
// start that fails stops what had started, in the same reverse order. Each hook runs at most
// once; a hook that fails is logged and the others still run.
import { NOT_READY_DRAINING, type Readiness } from '../gateway/readiness.ts';
import type { Logger } from '../logging/logger.ts';

export interface Component {
  /** Named in the log when one of its hooks fails. */
  name: string;
  /** Brings it up; the component is registered only once this resolves. */
  start?: () => Promise<void> | void;
  /** Whether it can do its work now (/readyz); not asked once draining began. */
  ready?: () => Promise<Readiness>;
  /** First phase of a shutdown, while everything still serves: stop taking new work. */
  drain?: () => Promise<void> | void;
  /** Last phase: finish or cut what is left and release what it holds. */
  stop?: () => Promise<void> | void;
}

const NOT_READY_STARTING = 'starting up';

export class Lifecycle {
  private readonly components: Component[] = [];
  private started = false;
  private isDraining = false;
  private stopped: Promise<void> | undefined;

  constructor(private readonly logger: Logger) {}

  /** True from the first moment of a shutdown: readiness answers "shutting down" from then on. */
  get draining(): boolean {
    return this.isDraining;
  }

  /** Starts a component and registers it; a component that fails to start is not registered. */
  async start(component: Component): Promise<void> {
    if (this.stopped !== undefined) throw new Error(`${component.name} cannot start: the process is stopping`);
    await component.start?.();
    this.components.push(component);
  }

  /** Registers a component that is already running (made synchronously, or started by its builder). */
  register(component: Omit<Component, 'start'>): void {
    if (this.stopped !== undefined) throw new Error(`${component.name} cannot start: the process is stopping`);
    this.components.push(component);
  }

  /**
   * Runs a role's builders, which start and register components; when one throws, every
   * component already started is stopped (without a drain: nothing was served) and the error
   * is thrown on. Resolves once all are up: ready checks are asked from then on.
   */
  async build<T>(builders: (lifecycle: Lifecycle) => Promise<T>): Promise<T> {
    try {
      const built = await builders(this);
      this.started = true;
      return built;
    } catch (error) {
      await this.shutdown(false);
      throw error;
    }
  }

  /** Ready when every component says so, in the order they started; the first that is not names why. */
  async checkReady(): Promise<Readiness> {
    if (this.draining) return { ready: false, reason: NOT_READY_DRAINING };
    if (!this.started) return { ready: false, reason: NOT_READY_STARTING };
    for (const component of this.components) {
      if (component.ready === undefined) continue;
      const readiness = await component.ready();
      if (!readiness.ready) return readiness;
    }
    return this.draining ? { ready: false, reason: NOT_READY_DRAINING } : { ready: true };
  }

  /** Drains, then stops every component; a second call waits for the first. */
  stop(): Promise<void> {
    return this.shutdown(true);
  }

  private shutdown(drain: boolean): Promise<void> {
    this.stopped ??= this.runShutdown(drain);
    return this.stopped;
  }

  private async runShutdown(drain: boolean): Promise<void> {
    this.isDraining = true;
    const components = this.components.splice(0);
    if (drain) {
      for (const component of components) await this.run(component, 'drain');
    }
    for (const component of components.reverse()) await this.run(component, 'stop');
  }

  private async run(component: Component, phase: 'drain' | 'stop'): Promise<void> {
    const hook = component[phase];
    if (hook === undefined) return;
    try {
      await hook();
    } catch (error) {
      this.logger.error(`${component.name} ${phase === 'drain' ? 'drain' : 'close'} failed`, { error: (error as Error).message });
    }
  }
}
