// A clock that moves only when the test says so. Sleeps resolve when the
// clock is advanced past their deadline (or their signal aborts).
import type { Clock } from '../../src/util/clock.js';

interface Sleeper {
  until: number;
  resolve: () => void;
}

export class ManualClock implements Clock {
  private t: number;
  private sleepers: Sleeper[] = [];

  constructor(start = 1_800_000_000_000) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      if (ms <= 0) return resolve();
      const onAbort = () => {
        this.sleepers = this.sleepers.filter((x) => x !== s);
        resolve();
      };
      // As the system clock does: a sleep that ends on time lets go of the signal.
      const s: Sleeper = {
        until: this.t + ms,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      this.sleepers.push(s);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Number of pending sleeps (what the code under test waits on). */
  get waiting(): number {
    return this.sleepers.length;
  }

  /** The earliest pending deadline, relative to now. */
  nextWakeInMs(): number | null {
    if (this.sleepers.length === 0) return null;
    return Math.min(...this.sleepers.map((s) => s.until)) - this.t;
  }

  advance(ms: number): void {
    this.t += ms;
    const due = this.sleepers.filter((s) => s.until <= this.t);
    this.sleepers = this.sleepers.filter((s) => s.until > this.t);
    for (const s of due) s.resolve();
  }
}
