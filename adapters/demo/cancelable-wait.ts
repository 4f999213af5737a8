// Waiting in a demo turn without delaying its cancellation.

function abortError(): DOMException {
  // The runtime decides "canceled" from its own signal; the error's name only has to make the
  // rejection recognizable to callers and tests, so a standard AbortError is used.
  return new DOMException('The turn was canceled', 'AbortError');
}

export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw abortError();
}

/** Waits `ms`, but rejects as soon as the signal fires so cancellation is not delayed a step. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) {
      reject(abortError());
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortError());
    };
    const done = (): void => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    };
    // With no delay configured, still yield to the event loop (so a cancel message can be
    // delivered) but skip the timer's ~1 ms minimum, which would dominate a 1000-step run.
    const timer = ms > 0 ? setTimeout(done, ms) : undefined;
    if (timer === undefined) setImmediate(done);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Waits `ms` but returns early (without throwing) when the signal fires. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return sleep(ms, signal).catch(() => undefined);
}
