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
}

export class CountLog {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly clock: Clock,
    private readonly log: () => Logger,
  ) {}

  /** Count `n` of `event` for these fields (the Data Source, a reason). */
  add(event: string, fields: Record<string, unknown>, n: number, message: string): void {
    if (n <= 0) return;
    const key = `${event}\0${JSON.stringify(fields)}`;
    let e = this.entries.get(key);
    if (!e) this.entries.set(key, (e = { event, fields, message, pending: 0, lastLoggedAt: -Infinity }));
    e.pending += n;
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
    this.log().warn({ event: e.event, ...e.fields, count: e.pending }, e.message);
    e.pending = 0;
    e.lastLoggedAt = now;
  }
}
