// Events that can come by the thousand (rows quarantined by the platform,
// lines dead-lettered by the reader) are logged as counts per Data Source,
// at most once per COUNT_LOG_INTERVAL_MS for each kind: the first at once,
// the rest summed until the interval has passed (README "Metrics and health").
import type { Logger } from '../log.js';
import type { Clock } from '../util/clock.js';

export const COUNT_LOG_INTERVAL_MS = 60_000;

interface Entry {
  event: string;
  fields: Record<string, unknown>;
  message: string;
  pending: number;
  lastLoggedAt: number;
  /** Calls summed since the last line, and the last call's detail (logged when it is alone). */
  adds: number;
  detail: Record<string, unknown> | null;
}

export class CountLog {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly clock: Clock,
    private readonly log: () => Logger,
  ) {}

  /**
   * Count `n` of `event` for these fields (the Data Source, a reason).
   * `detail` (a batch, a status) is logged with a count that is one call's
   * alone; summed ones say how many calls they sum (`writes`) instead.
   */
  add(event: string, fields: Record<string, unknown>, n: number, message: string, detail: Record<string, unknown> | null = null): void {
    if (n <= 0) return;
    const key = `${event}\0${JSON.stringify(fields)}`;
    let e = this.entries.get(key);
    if (!e) this.entries.set(key, (e = { event, fields, message, pending: 0, lastLoggedAt: -Infinity, adds: 0, detail: null }));
    e.pending += n;
    e.adds++;
    e.detail = detail;
    this.flushEntry(e, false);
  }

  /** Log what is due (called on the agent's tick); with `all`, everything pending (at stop). */
  flush(all = false): void {
    for (const e of this.entries.values()) this.flushEntry(e, all);
  }

  private flushEntry(e: Entry, force: boolean): void {
    if (e.pending === 0) return;
    const now = this.clock.now();
    if (!force && now - e.lastLoggedAt < COUNT_LOG_INTERVAL_MS) return;
    const extra = e.detail === null ? {} : e.adds === 1 ? e.detail : { writes: e.adds };
    this.log().warn({ event: e.event, ...e.fields, ...extra, count: e.pending }, e.message);
    e.pending = 0;
    e.adds = 0;
    e.lastLoggedAt = now;
  }
}
