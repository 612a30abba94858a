// The organization's request budget: at most `limit` requests in any sliding
// 1-second window, counting every request received, including those answered
// 429 (docs/emulator.md, "Events API behaviour", step 2). A client that
// keeps hammering while limited therefore stays limited; one that waits
// `Retry-After` gets through.
//
// The window holds one timestamp per request of the last second, so memory is
// bounded by the request rate over one second.
//
// The same limiter counts Data Source creations (5 per minute, datasources.ts)
// with a longer window and `countRefused: false`: a refused creation created
// nothing, so it does not use up the budget.

export const RATE_WINDOW_MS = 1000;

export type RateDecision =
  | { allowed: true }
  | { allowed: false; limit: number; remaining: 0; resetSeconds: number };

export class SlidingWindowLimiter {
  readonly limit: number;
  readonly #now: () => number;
  readonly #windowMs: number;
  readonly #countRefused: boolean;
  /** Arrival times (ms), oldest first; entries before #head are expired. */
  #times: number[] = [];
  #head = 0;

  constructor(limit: number, now: () => number, windowMs = RATE_WINDOW_MS, countRefused = true) {
    this.limit = limit;
    this.#now = now;
    this.#windowMs = windowMs;
    this.#countRefused = countRefused;
  }

  /** Counts one request (a refused one only with countRefused) and says whether it is within the budget. */
  take(): RateDecision {
    const now = this.#now();
    this.#expire(now);
    const inWindow = this.#times.length - this.#head;
    if (inWindow < this.limit || this.#countRefused) this.#times.push(now);
    if (inWindow < this.limit) return { allowed: true };
    // A slot frees when enough of the oldest counted requests have left the
    // window that fewer than `limit` remain.
    const n = this.#countRefused ? inWindow + 1 : inWindow;
    const freesAt = this.#times[this.#head + n - this.limit]! + this.#windowMs;
    const resetSeconds = Math.max(1, Math.ceil((freesAt - now) / 1000));
    return { allowed: false, limit: this.limit, remaining: 0, resetSeconds };
  }

  #expire(now: number): void {
    while (this.#head < this.#times.length && this.#times[this.#head]! <= now - this.#windowMs) this.#head += 1;
    // Compact now and then so the array does not grow without bound.
    if (this.#head > 1024 && this.#head * 2 > this.#times.length) {
      this.#times = this.#times.slice(this.#head);
      this.#head = 0;
    }
  }
}
