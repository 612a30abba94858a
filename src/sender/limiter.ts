// Request pacing behind a small interface, so the shared Redis budget can
// replace the local one. Local: starts at least 1000 / rps ms apart on the
// injected clock, measured from when the previous one actually went (no
// bursts, no reservoir, no catching up), so any sliding second holds at most
// `rps` requests, handed out first come, first served. A 5 % margin
// keeps jitter (a busy event loop or network delaying one request more than
// the next) from bunching arrivals at the server into a 101st request in its
// window: with 2 % a loaded 2-core machine showed 101-104.
import type { Clock } from '../util/clock.js';
import { systemClock } from '../util/clock.js';
import type { LongLived } from '../util/lifecycle.js';
import { BudgetMemory } from './budget-memory.js';

export interface RateLimiter extends LongLived {
  /** Resolves when one request may start. */
  acquire(): Promise<void>;
  /**
   * A 429 asked the budget to wait `ms` (at most MAX_SERVER_WAIT_MS). The sender pauses
   * itself; a shared budget also pauses every other agent of the budget.
   */
  pause(ms: number): void;
}

export const SPACING_MARGIN = 1.05;

export class LimiterClosedError extends Error {
  constructor() {
    super('the request rate limiter was closed');
  }
}

/** `memory.lastStartAt`: when the last request was let go (clock ms), kept by the process across a reload's new limiter. */
export function createLocalLimiter(requestsPerSecond: number, clock: Clock = systemClock, memory = new BudgetMemory()): RateLimiter {
  const spacingMs = (1000 / requestsPerSecond) * SPACING_MARGIN;
  const queue: Array<{ go: () => void; fail: (err: Error) => void }> = [];
  let pumping = false;
  let closed = false;
  const stop = new AbortController();
  // One waiter at a time, each spacingMs after the previous one actually
  // went: a timer that fires late delays the rest instead of letting them
  // catch up in a burst.
  const pump = async (): Promise<void> => {
    if (pumping) return;
    pumping = true;
    try {
      while (queue.length > 0 && !closed) {
        const wait = memory.lastStartAt + spacingMs - clock.now();
        if (wait > 0) await clock.sleep(wait, stop.signal);
        if (closed) break;
        memory.lastStartAt = clock.now();
        queue.shift()!.go();
      }
    } finally {
      pumping = false;
    }
  };
  return {
    acquire() {
      if (closed) return Promise.reject(new LimiterClosedError());
      return new Promise<void>((go, fail) => {
        queue.push({ go, fail });
        void pump();
      });
    },
    // One agent's own pause is kept by its sender.
    pause: () => undefined,
    close: async () => {
      closed = true;
      stop.abort();
      for (const w of queue.splice(0)) w.fail(new LimiterClosedError());
    },
    // Waiters fail at once either way.
    destroy() {
      return this.close();
    },
  };
}

/** Counts concurrent requests: at most `max` at once (max_in_flight; `setMax` moves it, max_in_flight: auto). */
export class Semaphore {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(private max: number) {}

  async acquire(): Promise<void> {
    if (this.active < this.max) {
      this.active++;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  release(): void {
    if (this.active <= this.max) {
      const next = this.waiters.shift();
      if (next) return next();
    }
    this.active--;
  }

  /** A new limit: more waiters start at once when it grows; when it shrinks, releases drain the excess first. */
  setMax(max: number): void {
    this.max = max;
    while (this.active < this.max && this.waiters.length > 0) {
      this.active++;
      this.waiters.shift()!();
    }
  }

  get inUse(): number {
    return this.active;
  }
}

/**
 * Compressed bytes in flight together (limits.max_in_flight_bytes): a
 * request waits until its body fits, except that one request may always go
 * (a body larger than the whole budget must not wait forever).
 */
export class ByteBudget {
  private used = 0;
  private readonly waiters: Array<{ bytes: number; go: () => void }> = [];

  /** `max` may be a function (limits.max_in_flight_bytes: auto follows the bodies' size); it is asked at every turn. */
  constructor(private readonly max: number | (() => number)) {}

  async acquire(bytes: number): Promise<void> {
    if (this.fits(bytes) && this.waiters.length === 0) {
      this.used += bytes;
      return;
    }
    await new Promise<void>((go) => this.waiters.push({ bytes, go }));
  }

  release(bytes: number): void {
    this.used -= bytes;
    this.admit();
  }

  /** Let waiters go that fit now (after a release, or when an auto bound grew). */
  admit(): void {
    while (this.waiters.length > 0 && this.fits(this.waiters[0]!.bytes)) {
      const w = this.waiters.shift()!;
      this.used += w.bytes;
      w.go();
    }
  }

  get inUse(): number {
    return this.used;
  }

  /** Acquirers waiting for room. */
  get waiting(): number {
    return this.waiters.length;
  }

  private fits(bytes: number): boolean {
    return this.used === 0 || this.used + bytes <= (typeof this.max === 'number' ? this.max : this.max());
  }
}
