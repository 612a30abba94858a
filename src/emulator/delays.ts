// Timers the emulator owns (the `slow` fault, answer latency, upload
// pacing), so close() can cancel them: a pending delay rejects with
// EmulatorClosedError and its request is dropped instead of touching a closed
// store or keeping the process alive.
import { systemClock, type Clock } from '../util/clock.js';
import type { LatencyRange } from './types.js';

export class EmulatorClosedError extends Error {
  readonly code = 'SPOOLSHIP_ERR_EMULATOR_CLOSED';
  constructor() {
    super('the emulator is closed');
  }
}

/** A delay in [minMs, maxMs], uniformly (one draw of `random`, in [0, 1)). */
export function pickDelayMs(range: LatencyRange, random: () => number): number {
  if (range.minMs === range.maxMs) return range.minMs;
  return range.minMs + Math.floor(random() * (range.maxMs - range.minMs + 1));
}

export class Delays {
  readonly #pending = new Set<AbortController>();
  #closed = false;

  /** `clock`: real time unless a test injects its own (EmulatorOptions.timers). */
  constructor(private readonly clock: Clock = systemClock) {}

  delay(delayMs: number): Promise<void> {
    if (this.#closed) return Promise.reject(new EmulatorClosedError());
    const ac = new AbortController();
    this.#pending.add(ac);
    return this.clock.sleep(delayMs, ac.signal).then(() => {
      this.#pending.delete(ac);
      if (ac.signal.aborted) throw new EmulatorClosedError();
    });
  }

  close(): void {
    this.#closed = true;
    for (const ac of this.#pending) ac.abort();
    this.#pending.clear();
  }
}
