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

/** Counts concurrent requests: at most `max` at once (max_in_flight). */
export class Semaphore {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(private readonly max: number) {}

  async acquire(): Promise<void> {
    if (this.active < this.max) {
      this.active++;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.active--;
  }

  get inUse(): number {
    return this.active;
  }
}
