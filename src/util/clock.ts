// Time is injected: timing rules (Retry-After, backoff, the 60 s park probe,
// linger) are driven by a Clock so tests advance time instead of sleeping.

export interface Clock {
  now(): number;
  /** Resolves after `ms`, or early (without rejecting) when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep(ms, signal) {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const onAbort = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, Math.max(0, ms));
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  },
};

/** Run `fn` once after `ms` on `clock` (a manual clock in tests); the returned function cancels it. */
export function after(clock: Clock, ms: number, fn: () => void): () => void {
  const ac = new AbortController();
  void clock.sleep(ms, ac.signal).then(() => {
    if (!ac.signal.aborted) fn();
  });
  return () => ac.abort();
}

/** Run `fn` every `ms` on `clock` until the returned function is called (the next period starts before `fn` runs, so a throw does not stop it). */
export function every(clock: Clock, ms: number, fn: () => void): () => void {
  let stopped = false;
  let cancelNext: () => void = () => undefined;
  const schedule = (): void => {
    cancelNext = after(clock, ms, () => {
      if (stopped) return;
      schedule();
      fn();
    });
  };
  schedule();
  return () => {
    stopped = true;
    cancelNext();
  };
}
