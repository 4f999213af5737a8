// The places one worker process has for an agent's turns, shared by queued jobs and turns started
// where they were accepted (src/runtime/turn-slots.ts): never more in use than the limit, a waiting
// job goes ahead of a new task, a new task waits while the line moves (and reads whether it does
// before it joins), and a changed limit
// applies to the places as they come back.
import { describe, expect, it } from 'vitest';
import { LOOK_EVERY_MS, STILL_LOOKS_TO_LEAVE, TurnSlots } from '../src/runtime/turn-slots.ts';

/** Whether the promise has settled by the time the microtasks queued before this call have run. */
async function settled(promise: Promise<void>): Promise<boolean> {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('TurnSlots', () => {
  it('gives no more places than its limit; a job waits for one, and a new task does not go ahead of it', async () => {
    const slots = new TurnSlots(2);
    expect(slots.tryTake()).toBe(true);
    expect(slots.tryTake()).toBe(true);
    expect(slots.tryTake()).toBe(false);
    const job = slots.take();
    expect(await settled(job)).toBe(false);
    slots.release();
    expect(await settled(job)).toBe(true);
    // The place went to the job: none is free for a new task.
    expect(slots.hasFree()).toBe(false);
    slots.release();
    expect(slots.tryTake()).toBe(true);
  });

  it('serves waiting jobs in order', async () => {
    const slots = new TurnSlots(1);
    expect(slots.tryTake()).toBe(true);
    const order: string[] = [];
    const first = slots.take().then(() => order.push('first'));
    const second = slots.take().then(() => order.push('second'));
    slots.release();
    await first;
    slots.release();
    await second;
    expect(order).toEqual(['first', 'second']);
  });

  it('applies a lowered limit as places come back, and a raised one to waiting jobs at once', async () => {
    const slots = new TurnSlots(3);
    for (let i = 0; i < 3; i++) expect(slots.tryTake()).toBe(true);
    slots.setLimit(1);
    const job = slots.take();
    slots.release();
    slots.release();
    // Two places came back, but one is still in use and the limit is now one.
    expect(await settled(job)).toBe(false);
    slots.setLimit(2);
    expect(await settled(job)).toBe(true);
    expect(slots.hasFree()).toBe(false);
  });

  it('lets a new task wait a bounded time for a place, in line behind a waiting job', async () => {
    const slots = new TurnSlots(1);
    expect(slots.tryTake()).toBe(true);
    const job = slots.take();
    const task = slots.takeWithin(5_000);
    slots.release();
    // The job was first in line.
    expect(await settled(job)).toBe(true);
    expect(await settled(task.then(() => undefined))).toBe(false);
    slots.release();
    expect(await task).toBe(true);
    expect(slots.hasFree()).toBe(false);
  });

  it('gives a new task that waited in vain no place, and takes it out of the line', async () => {
    const slots = new TurnSlots(1);
    expect(slots.tryTake()).toBe(true);
    expect(await slots.takeWithin(20)).toBe(false);
    // The place freed later is free, not handed to the task that left.
    slots.release();
    expect(slots.hasFree()).toBe(true);
    expect(await slots.takeWithin(0)).toBe(true);
    expect(await slots.takeWithin(0)).toBe(false);
  });

  it('keeps a new task in line past its first look while the line moves', async () => {
    const slots = new TurnSlots(1);
    expect(slots.tryTake()).toBe(true);
    const jobs = [slots.take(), slots.take(), slots.take()];
    const task = slots.takeWithin(1_000);
    // A place freed every 30 ms: the task, fourth in line, gets one after about 120 ms, past its first look.
    for (let i = 0; i < 4; i++) {
      await sleep(30);
      slots.release();
    }
    await Promise.all(jobs);
    expect(await task).toBe(true);
  });

  it('does not read an event-loop stall as a line standing still', async () => {
    const slots = new TurnSlots(1);
    expect(slots.tryTake()).toBe(true);
    const task = slots.takeWithin(1_000);
    // The loop is held past two looks: the late look comes before the place could be given back.
    const until = performance.now() + 3 * LOOK_EVERY_MS;
    while (performance.now() < until);
    setTimeout(() => slots.release(), 10);
    expect(await task).toBe(true);
  });

  it('sends a new task to the queue once the line stands still, long before its bound', async () => {
    const slots = new TurnSlots(1);
    expect(slots.tryTake()).toBe(true);
    const startedAt = performance.now();
    expect(await slots.takeWithin(2_000)).toBe(false);
    expect(performance.now() - startedAt).toBeLessThan(LOOK_EVERY_MS * STILL_LOOKS_TO_LEAVE + 400);
    // It left the line: the place freed is free.
    slots.release();
    expect(slots.hasFree()).toBe(true);
  });

  it('reads the line as moving while a place is free, or moved within two looks (given back, or the last one taken); not once it has stood still longer', async () => {
    const still = LOOK_EVERY_MS * STILL_LOOKS_TO_LEAVE;
    const slots = new TurnSlots(2);
    expect(slots.moving()).toBe(true);
    expect(slots.tryTake()).toBe(true);
    await sleep(still + 20);
    // One place is still free: a newcomer gets it, however long the other has been held.
    expect(slots.moving()).toBe(true);
    expect(slots.tryTake()).toBe(true);
    // The last place taken just now: a burst's turns are only starting, not stuck.
    expect(slots.moving()).toBe(true);
    await sleep(still + 20);
    expect(slots.moving()).toBe(false);
    slots.release();
    expect(slots.tryTake()).toBe(true);
    expect(slots.moving()).toBe(true);
    await sleep(still + 20);
    expect(slots.moving()).toBe(false);
  });
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
