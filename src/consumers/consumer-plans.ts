// What a process builds for consumer plans from its control-plane view: the directory of who is
// which consumer, the gateway's gate, the workers' meters, and the usage reader.
import type { ControlView } from '../control/control-view.ts';
import type { RedisClient } from '../redis/connection.ts';
import { ConsumerStore } from '../store/consumers/consumer-store.ts';
import { ConsumerDirectory, type PlanDefaults } from './consumer-directory.ts';
import { ConsumerGate } from './consumer-gate.ts';
import { ConsumerMeters } from './consumer-meter.ts';
import type { ConsumerSpec } from './consumer-spec.ts';

export interface ConsumerPlans {
  directory: ConsumerDirectory;
  store: ConsumerStore;
  gate: ConsumerGate;
  meters: ConsumerMeters;
}

export function consumerPlans(view: ControlView, redis: RedisClient, prefix: string, defaults: PlanDefaults, configured: Readonly<Record<string, ConsumerSpec>> = {}): ConsumerPlans {
  const directory = new ConsumerDirectory(view, defaults, configured);
  const store = new ConsumerStore(redis, prefix);
  return { directory, store, gate: new ConsumerGate(directory, store), meters: new ConsumerMeters(directory, store) };
}
