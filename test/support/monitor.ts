// A MONITOR connection that can be opened while other clients are busy. ioredis marks a
// connection as monitoring only in a promise callback after MONITOR's OK, so a line Redis
// streams in the same socket read finds no command waiting for a reply: ioredis reports
// "Command queue state error", which rejected `monitor()` and failed a suite now and then.
// Such a line comes before any caller starts counting (each waits, then resets its counts); it
// is dropped here.
import { Redis } from 'ioredis';

const QUEUE_STATE_ERROR = 'Command queue state error';

/** A connection in MONITOR mode to the Redis at `target` (a URL, or the one a client talks to), once Redis streams to it. */
export async function openMonitor(target: string | Redis): Promise<Redis> {
  const monitor = typeof target === 'string' ? new Redis(target, { monitor: true }) : target.duplicate({ monitor: true, lazyConnect: false });
  let monitoring = false;
  await new Promise<void>((resolve, reject) => {
    monitor.once('monitoring', () => {
      monitoring = true;
      resolve();
    });
    monitor.on('error', (error: Error) => {
      if (!monitoring && !error.message.startsWith(QUEUE_STATE_ERROR)) reject(error);
    });
  });
  return monitor;
}
