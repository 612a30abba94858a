// Which Data Sources exist (`--datasources`), and their creation by a first
// append (docs/emulator.md, "Events API behaviour"): POST /v0/events needs
// DATASOURCE:APPEND or DATASOURCE:CREATE; creating a Data Source that way is
// limited to 5 per minute (limits are per organization). Without a list every name counts as
// existing, so nothing is ever created and an APPEND token may append anywhere.
//
// Bounded: the set grows by at most CREATIONS_PER_WINDOW names per window.
import { SlidingWindowLimiter, type RateDecision } from '../rate-limiter.js';

export const CREATIONS_PER_WINDOW = 5;
export const CREATION_WINDOW_MS = 60 * 1000; // one minute

export class DataSourceCatalog {
  /** null: no list was given, every name exists. */
  readonly #existing: Set<string> | null;
  readonly #creations: SlidingWindowLimiter;

  constructor(initial: readonly string[] | null, now: () => number) {
    this.#existing = initial === null ? null : new Set(initial);
    this.#creations = new SlidingWindowLimiter(CREATIONS_PER_WINDOW, now, CREATION_WINDOW_MS, false);
  }

  exists(name: string): boolean {
    return this.#existing === null || this.#existing.has(name);
  }

  /**
   * Makes sure `name` exists, creating it within the creation budget. Check and
   * creation happen in one synchronous step, so two first appends racing to the
   * same new name create it once.
   */
  ensure(name: string): RateDecision {
    if (this.exists(name)) return { allowed: true };
    const decision = this.#creations.take();
    if (decision.allowed) this.#existing!.add(name);
    return decision;
  }
}
