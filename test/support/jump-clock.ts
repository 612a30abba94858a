// Real time that a test may move forward at once: now() is Date.now() plus
// the jumps so far; a sleep ends after its real time, or as soon as a jump
// takes the clock past its deadline. For waits of a minute (a 429's
// Retry-After from a per-minute limit) in tests that otherwise run on real
// time (linger, rescans, I/O).
import type { Clock } from '../../src/util/clock.js';

interface Sleeper {
  until: number;
  done: () => void;
}

export class JumpClock implements Clock {
  private offset = 0;
  private sleepers = new Set<Sleeper>();

  now(): number {
    return Date.now() + this.offset;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const s: Sleeper = { until: this.now() + Math.max(0, ms), done: () => undefined };
      const timer = setTimeout(() => s.done(), Math.max(0, ms));
      const onAbort = () => s.done();
      s.done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.sleepers.delete(s);
        resolve();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.sleepers.add(s);
    });
  }

  /** Move time forward by `ms` at once: every sleep whose deadline passes ends. */
  jump(ms: number): void {
    this.offset += ms;
    const t = this.now();
    for (const s of [...this.sleepers]) if (s.until <= t) s.done();
  }
}
