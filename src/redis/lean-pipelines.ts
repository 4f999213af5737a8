// Pipelines that find a connection's scripts on their prototype. ioredis's Pipeline constructor
// copies every script defineCommand added to its connection (and every added builtin) onto the
// new pipeline, three properties each. BullMQ defines its ~64 scripts on the store's commands
// connection (the turn queues share it, so a new task's job add rides in its create script's
// write), and auto-pipelining builds a pipeline for every tick that sends commands: 42 µs of
// copying per pipeline, ahead of a round trip that itself costs about 150 µs. Here the copies
// are made once per connection, on a prototype, and made again only after a script is added.
// (The constructor's map of scripts by SHA stays empty: ioredis 5 no longer reads it.)
import type { Cluster, Redis } from 'ioredis';

type Methods = Record<string, unknown>;
type PipelineClass = new (redis: unknown) => Methods;

/** What this relies on in ioredis (5.x): where a pipeline comes from, and what it copies. */
interface PipelineHost {
  scriptsSet: Record<string, unknown>;
  addedBuiltinSet: Set<string>;
  pipeline(commands?: unknown[][]): Methods;
  defineCommand(...args: unknown[]): void;
  addBuiltinCommand(...args: unknown[]): void;
}

/**
 * Makes `client.pipeline()` (which auto-pipelining calls too) build pipelines whose script and
 * added-builtin methods come from a shared prototype. A pipeline behaves as before: the methods
 * are the connection's own, called with the pipeline as `this`. MULTI keeps ioredis's pipeline.
 */
export function leanPipelines(client: Redis | Cluster): void {
  const host = client as unknown as PipelineHost & Methods;
  const Pipeline = host.pipeline().constructor as PipelineClass;
  // What the constructor reads its options and kind from, with nothing to copy: the connection
  // itself underneath, so `isCluster`, `options` and the class name are the connection's.
  const standIn: unknown = Object.create(client, { scriptsSet: { value: {} }, addedBuiltinSet: { value: new Set<string>() } });
  let Lean: (new () => Methods) | undefined;
  const leanClass = (): new () => Methods => {
    if (Lean !== undefined) return Lean;
    class LeanPipeline extends Pipeline {
      constructor() {
        super(standIn);
        this.redis = client;
      }
    }
    const shared = LeanPipeline.prototype as unknown as Methods;
    for (const name of [...Object.keys(host.scriptsSet), ...host.addedBuiltinSet]) {
      shared[name] = host[name];
      shared[`${name}Buffer`] = host[`${name}Buffer`];
    }
    Lean = LeanPipeline;
    return Lean;
  };
  // A script or builtin added later (BullMQ loads its scripts once connected) joins at the next pipeline.
  for (const adds of ['defineCommand', 'addBuiltinCommand'] as const) {
    const add = host[adds].bind(client);
    host[adds] = (...args: unknown[]): void => {
      add(...args);
      Lean = undefined;
    };
  }
  host.pipeline = (commands?: unknown[][]): Methods => {
    const pipeline = new (leanClass())();
    if (commands !== undefined) (pipeline.addBatch as (batch: unknown[][]) => void)(commands);
    return pipeline;
  };
}
