// Request pacing behind a small interface, so the shared Redis budget can
// replace the local one. Local: bottleneck with minTime = 1000 / rps and no
// reservoir, so starts are evenly spaced and any sliding second holds at most
// `rps` requests. A 2 % margin keeps network jitter from bunching arrivals at
// the server into a 101st request in its window.
import Bottleneck from 'bottleneck';

export interface RateLimiter {
  /** Resolves when one request may start. */
  acquire(): Promise<void>;
  close(): Promise<void>;
}

export const SPACING_MARGIN = 1.02;

export function createLocalLimiter(requestsPerSecond: number): RateLimiter {
  const limiter = new Bottleneck({ minTime: (1000 / requestsPerSecond) * SPACING_MARGIN, maxConcurrent: null });
  return {
    acquire: () => limiter.schedule(() => Promise.resolve()),
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
