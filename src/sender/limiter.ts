// Request pacing behind a small interface, so the shared Redis budget can
// replace the local one. Local: bottleneck with minTime = 1000 / rps and no
// reservoir, so starts are evenly spaced and any sliding second holds at most
// `rps` requests. A 5 % margin keeps jitter (a busy event loop or network
// delaying one request more than the next) from bunching arrivals at the
// server into a 101st request in its window: with 2 % a loaded 2-core machine
// showed 101-104.
import Bottleneck from 'bottleneck';

export interface RateLimiter {
  /** Resolves when one request may start. */
  acquire(): Promise<void>;
  /**
   * A 429 asked the budget to wait `ms` (at most 900 s). The sender pauses
   * itself; a shared budget also pauses every other agent of the budget.
   */
  pause(ms: number): void;
  close(): Promise<void>;
}

export const SPACING_MARGIN = 1.05;

export function createLocalLimiter(requestsPerSecond: number): RateLimiter {
  const limiter = new Bottleneck({ minTime: (1000 / requestsPerSecond) * SPACING_MARGIN, maxConcurrent: null });
  return {
    acquire: () => limiter.schedule(() => Promise.resolve()),
    // One agent's own pause is kept by its sender.
    pause: () => undefined,
    close: async () => {
      await limiter.stop({ dropWaitingJobs: true }).catch(() => undefined);
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

  constructor(private readonly max: number) {}

  async acquire(bytes: number): Promise<void> {
    if (this.fits(bytes) && this.waiters.length === 0) {
      this.used += bytes;
      return;
    }
    await new Promise<void>((go) => this.waiters.push({ bytes, go }));
  }

  release(bytes: number): void {
    this.used -= bytes;
    while (this.waiters.length > 0 && this.fits(this.waiters[0]!.bytes)) {
      const w = this.waiters.shift()!;
      this.used += w.bytes;
      w.go();
    }
  }

  get inUse(): number {
    return this.used;
  }

  private fits(bytes: number): boolean {
    return this.used === 0 || this.used + bytes <= this.max;
  }
}
