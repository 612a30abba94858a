// What a request budget has learned that must outlive one sender. A SIGHUP
// that changes the config builds a new pipeline and a new sender; the run
// command keeps one of these per API host for the process and hands it to
// each, so a Retry-After under way, the 413 learned limit and the local
// limiter's last start carry over (docs/configuration.md "Reloading"). A
// one-shot command's sender has one of its own.
export class BudgetMemory {
  /** No request of the budget starts before this (clock ms): the latest Retry-After (clearance.ts). */
  pausedUntil = 0;
  /** When the local limiter last let a request go (clock ms; limiter.ts). */
  lastStartAt = -Infinity;
  /** The 413 learned limit and when it was learned (learned-limit.ts); null when none. */
  learned: { bytes: number; since: number } | null = null;

  /** `baseUrl`: the API host whose answers taught it (another host starts afresh). */
  constructor(readonly baseUrl: string | null = null) {}
}
