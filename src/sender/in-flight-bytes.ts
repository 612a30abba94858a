// limits.max_in_flight_bytes: auto. The byte bound follows what the
// concurrency cap needs at the size the bodies actually have: cap x the
// running mean of compressed body sizes, at most MAX_AUTO_IN_FLIGHT_BYTES
// (1 GiB). Bodies beyond a small in-memory share wait for their answers in
// state_dir/spill (pipeline/held-bodies.ts), so this bounds disk, not memory.
// Before the first body is seen the bound is the ceiling; one request always
// goes (ByteBudget), so a body larger than the bound is never stuck.
import { MAX_AUTO_IN_FLIGHT_BYTES } from '../config/limits.js';

/** Weight of each new body in the running mean: about the last 20 bodies count. */
const MEAN_WEIGHT = 0.05;

export class AutoInFlightBytes {
  private mean = 0;

  constructor(
    /** The most requests auto concurrency may reach (max_in_flight_cap within max_connections). */
    private readonly cap: number,
    private readonly ceiling = MAX_AUTO_IN_FLIGHT_BYTES,
  ) {}

  /** A compressed body is about to take its turn. */
  observe(bytes: number): void {
    this.mean = this.mean === 0 ? bytes : this.mean + (bytes - this.mean) * MEAN_WEIGHT;
  }

  get limit(): number {
    return this.mean === 0 ? this.ceiling : Math.min(this.ceiling, Math.ceil(this.cap * this.mean));
  }
}

/** The bound for a ByteBudget: a number as configured, or auto's, which moves with the bodies. */
export function inFlightBytesBound(setting: number | 'auto' | undefined, cap: number): { bound: number | (() => number); observe: (bytes: number) => void } {
  if (setting !== 'auto') return { bound: setting ?? Infinity, observe: () => {} };
  const auto = new AutoInFlightBytes(cap);
  return { bound: () => auto.limit, observe: (bytes) => auto.observe(bytes) };
}
