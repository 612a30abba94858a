// Retries are logged once per streak, never per request: WARN when the first
// request of a streak fails, INFO with the count by reason once requests
// succeed and none has failed for STREAK_QUIET_MS. Ended at the first
// acknowledgement, a flapping API (every 4th answer a 503) logged a WARN and
// an INFO per failed request.
import type { Logger } from '../log.js';
import { MAX_SERVER_WAIT_MS } from '../sender/retry-policy.js';
import type { Clock } from '../util/clock.js';

/** How long requests must go without a failure, after a success, for a streak to be over. */
export const STREAK_QUIET_MS = 10_000;

export class RetryStreak {
  private count = 0;
  private readonly reasons = new Map<string, number>();
  private lastFailureAt = 0;
  /** A request succeeded since the last failure. */
  private succeeded = false;
  /**
   * Odd answers already warned about: an ignored Retry-After once per retry
   * streak, counts that do not add up once per streak of them (until counts
   * add up again), other odd acknowledgements once per run.
   */
  private readonly warned = new Set<string>();

  constructor(
    private readonly log: () => Logger,
    private readonly clock: Clock,
  ) {}

  /** `where`: the API's address (password redacted); `cause`: what failed (the error code and message, or the HTTP status). */
  retry(reason: string, ds: string, cause?: string, where?: string): void {
    if (this.count === 0) {
      this.log().warn(
        { event: 'retrying', reason, datasource: ds, cause: cause ?? null, api: where ?? null },
        `retrying: requests are failing${cause ? ` (${cause})` : ''}; batches are kept and resent with the same bytes`,
      );
    }
    this.count++;
    this.reasons.set(reason, (this.reasons.get(reason) ?? 0) + 1);
    this.lastFailureAt = this.clock.now();
    this.succeeded = false;
  }

  /** An answer worth one WARN: a Retry-After that was ignored, an empty 2xx body, a 202 while waiting. */
  oddAnswer(what: string, ds: string, detail: string | null): void {
    if (this.warned.has(what)) return;
    this.warned.add(what);
    const why: Record<string, string> = {
      ignored_wait: `a 429 asked for a wait outside 0-${MAX_SERVER_WAIT_MS / 1000} s, in the past or unparseable: ignored, backing off instead`,
      empty_body: 'an acknowledgement came with an empty body (the Events API answers with row counts); taken as acknowledged',
      accepted_under_wait: 'the API answered 202 although api.wait is true; taken as acknowledged',
      counts_mismatch: 'an acknowledgement counted rows that do not add up to the lines sent (successful_rows + quarantined_rows); taken as acknowledged, the counts ignored',
    };
    this.log().warn({ event: `odd_answer_${what}`, datasource: ds, detail }, why[what] ?? what);
  }

  /** An acknowledgement's row counts add up to the lines sent: the next that does not is a new streak. */
  countsAddUp(): void {
    this.warned.delete('counts_mismatch');
  }

  success(): void {
    this.warned.delete('ignored_wait');
    if (this.count === 0) return;
    this.succeeded = true;
    this.tick();
  }

  /** The agent's tick: a streak whose requests succeed, with no failure for STREAK_QUIET_MS, is over. */
  tick(): void {
    if (this.count > 0 && this.succeeded && this.clock.now() - this.lastFailureAt >= STREAK_QUIET_MS) this.end();
  }

  /** At stop: a streak whose last request succeeded is over. */
  flush(): void {
    if (this.count > 0 && this.succeeded) this.end();
  }

  private end(): void {
    this.log().info({ event: 'retry_streak_over', retries: this.count, by_reason: Object.fromEntries(this.reasons) }, 'requests succeed again; retry streak over');
    this.count = 0;
    this.reasons.clear();
  }
}
