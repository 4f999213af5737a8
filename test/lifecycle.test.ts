// The lifecycle every role registers with: a shutdown drains in start order, then stops in
// reverse order, each hook once; a failing hook is logged and the others still run; a start
// that fails stops what had started, without a drain; readiness names the first part not ready.
import { describe, expect, it } from 'vitest';
import { Lifecycle } from '../src/app/lifecycle.ts';
import type { Logger } from '../src/logging/logger.ts';

function recordingLogger(): Logger & { errors: string[] } {
  const errors: string[] = [];
  const ignore = (): void => undefined;
  return { errors, debug: ignore, info: ignore, warn: ignore, error: (message: string) => void errors.push(message) };
}

function recorded(calls: string[], name: string) {
  return { name, drain: () => void calls.push(`drain ${name}`), stop: () => void calls.push(`stop ${name}`) };
}

describe('the lifecycle', () => {
  it('drains in the order the components started, then stops them in reverse, each hook once', async () => {
    const calls: string[] = [];
    const lifecycle = new Lifecycle(recordingLogger());
    await lifecycle.build(async (built) => {
      built.register(recorded(calls, 'connections'));
      await built.start({ ...recorded(calls, 'server'), start: () => void calls.push('start server') });
      built.register(recorded(calls, 'listener'));
    });
    await Promise.all([lifecycle.stop(), lifecycle.stop()]);
    await lifecycle.stop();
    expect(calls).toEqual(['start server', 'drain connections', 'drain server', 'drain listener', 'stop listener', 'stop server', 'stop connections']);
  });

  it('logs a hook that fails and still runs the others', async () => {
    const calls: string[] = [];
    const logger = recordingLogger();
    const lifecycle = new Lifecycle(logger);
    await lifecycle.build(async (built) => {
      built.register(recorded(calls, 'first'));
      built.register({ name: 'broken', stop: () => Promise.reject(new Error('boom')) });
      built.register(recorded(calls, 'last'));
    });
    await expect(lifecycle.stop()).resolves.toBeUndefined();
    expect(calls).toEqual(['drain first', 'drain last', 'stop last', 'stop first']);
    expect(logger.errors).toEqual(['broken close failed']);
  });

  it('stops what had started when a start fails, without draining it, and throws the error on', async () => {
    const calls: string[] = [];
    const lifecycle = new Lifecycle(recordingLogger());
    const failing = lifecycle.build(async (built) => {
      built.register(recorded(calls, 'connections'));
      await built.start({ ...recorded(calls, 'server'), start: () => Promise.reject(new Error('port in use')) });
      built.register(recorded(calls, 'never'));
    });
    await expect(failing).rejects.toThrow('port in use');
    expect(calls).toEqual(['stop connections']);
    expect(lifecycle.draining).toBe(true);
  });

  it('is ready once started and every component is; not ready while starting or draining', async () => {
    const lifecycle = new Lifecycle(recordingLogger());
    let storeReady = true;
    let releaseBuild: () => void = () => undefined;
    const building = lifecycle.build(async (built) => {
      built.register({ name: 'store', ready: async () => (storeReady ? { ready: true } : { ready: false, reason: 'the task store is not answering' }) });
      await new Promise<void>((resolve) => (releaseBuild = resolve));
    });
    expect(await lifecycle.checkReady()).toEqual({ ready: false, reason: 'starting up' });
    releaseBuild();
    await building;
    expect(await lifecycle.checkReady()).toEqual({ ready: true });
    storeReady = false;
    expect(await lifecycle.checkReady()).toEqual({ ready: false, reason: 'the task store is not answering' });
    storeReady = true;
    let drained: () => void = () => undefined;
    lifecycle.register({ name: 'gateway', drain: () => new Promise<void>((resolve) => (drained = resolve)) });
    const stopping = lifecycle.stop();
    expect(lifecycle.draining).toBe(true);
    expect(await lifecycle.checkReady()).toEqual({ ready: false, reason: 'shutting down' });
    drained();
    await stopping;
  });
});
