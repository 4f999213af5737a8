// The worker runs one job per job id and one run per task at a time (src/runtime/one-run-per-key.ts):
// a run of a key still running waits for it, failure included; other keys do not wait.
import { describe, expect, it } from 'vitest';
import { OneRunPerKey } from '../src/runtime/one-run-per-key.ts';

function gate(): { open: () => void; fail: (error: Error) => void; wait: Promise<void> } {
  let open!: () => void;
  let fail!: (error: Error) => void;
  const wait = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { open, fail, wait };
}

describe('one run per key', () => {
  it('starts a second run of a key only after the first has ended, even when the first failed', async () => {
    const runs = new OneRunPerKey();
    const first = gate();
    const order: string[] = [];
    let waited = 0;
    const one = runs.run('task-1', async () => {
      order.push('first starts');
      await first.wait;
    });
    const two = runs.run(
      'task-1',
      async () => {
        order.push('second starts');
      },
      () => (waited += 1),
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(order).toEqual(['first starts']);
    first.fail(new Error('the first run failed'));
    await expect(one).rejects.toThrow('the first run failed');
    await two;
    expect(order).toEqual(['first starts', 'second starts']);
    expect(waited).toBe(1);
  });

  it('lets runs of other keys go at once, and forgets a key once its last run ended', async () => {
    const runs = new OneRunPerKey();
    const held = gate();
    const order: string[] = [];
    const slow = runs.run('a', async () => {
      await held.wait;
      order.push('a');
    });
    await runs.run('b', async () => {
      order.push('b');
    });
    expect(order).toEqual(['b']);
    held.open();
    await slow;
    let waited = false;
    await runs.run('a', async () => undefined, () => (waited = true));
    expect(waited).toBe(false);
  });
});
