// Retries are logged once per streak, never per request: WARN when the first
// request of a streak fails, INFO with the count by reason when an
// acknowledgement ends it.
import type { Logger } from '../log.js';

export class RetryStreak {
  private count = 0;
  private readonly reasons = new Map<string, number>();

  constructor(private readonly log: () => Logger) {}

  retry(reason: string, ds: string): void {
    if (this.count === 0) this.log().warn({ reason, datasource: ds }, 'retrying: requests are failing; batches are kept and resent with the same bytes');
    this.count++;
    this.reasons.set(reason, (this.reasons.get(reason) ?? 0) + 1);
  }

  success(): void {
    if (this.count === 0) return;
    this.log().info({ retries: this.count, by_reason: Object.fromEntries(this.reasons) }, 'requests succeed again; retry streak over');
    this.count = 0;
    this.reasons.clear();
  }
}
