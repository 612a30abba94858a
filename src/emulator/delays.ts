// Timers the emulator owns (the `slow` fault, answer latency, upload
// pacing), so close() can cancel them: a pending delay rejects with
// EmulatorClosedError and its request is dropped instead of touching a closed
// store or keeping the process alive.
import type { LatencyRange } from './types.js';

export class EmulatorClosedError extends Error {
  readonly code = 'SPOOLSHIP_ERR_EMULATOR_CLOSED';
  constructor() {
    super('the emulator is closed');
  }
}

interface Pending {
  timer: NodeJS.Timeout;
  reject: (err: Error) => void;
}

/** A delay in [minMs, maxMs], uniformly (one draw of `random`, in [0, 1)). */
export function pickDelayMs(range: LatencyRange, random: () => number): number {
  if (range.minMs === range.maxMs) return range.minMs;
  return range.minMs + Math.floor(random() * (range.maxMs - range.minMs + 1));
}

export class Delays {
  readonly #pending = new Set<Pending>();
  #closed = false;

  delay(delayMs: number): Promise<void> {
    if (this.#closed) return Promise.reject(new EmulatorClosedError());
    return new Promise((resolve, reject) => {
      const entry: Pending = {
        timer: setTimeout(() => {
          this.#pending.delete(entry);
          resolve();
        }, delayMs),
        reject,
      };
      this.#pending.add(entry);
    });
  }

  close(): void {
    this.#closed = true;
    for (const entry of this.#pending) {
      clearTimeout(entry.timer);
      entry.reject(new EmulatorClosedError());
    }
    this.#pending.clear();
  }
}
