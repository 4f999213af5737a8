// The pub/sub channel names of tasks (their layout is in keys.ts), for the code that subscribes
// to them outside the store: the event hub, the push outbox, the workers' cancel listeners. They
// get channel names through this, and never a key of the store.
import { RedisKeys } from './keys.ts';

export type TaskChannels = Pick<RedisKeys, 'eventChannel' | 'taskOfEventChannel' | 'eventChannelPattern' | 'cancelChannel' | 'taskCancelChannel'>;

/** The task channels under a key prefix. */
export function taskChannels(prefix: string): TaskChannels {
  return new RedisKeys(prefix);
}
