// What the sender's answers tell operators: the request, retry, ack, park
// and learned-limit metrics, one log event per state change (a retry streak,
// a park, an odd answer once, a batch's 400 episode, the budget's 413
// episode, the learned body limit back at batch.max_bytes), quarantined rows
// counted at most once a minute, and each Data Source's last error for /status.
// The agent hands an instance to the sender as its hooks; refused lines go
// on to the dead-letter path (the pipeline's).
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import type { SendOutcome } from '../sender/http-client.js';
import type { AckOddity, RetryReason } from '../sender/retry-policy.js';
import type { BisectionEvent, DsParkReason, Part, RootBatch, SenderHooks, SplitEvent } from '../sender/sender.js';
import type { DeadLetterReason } from '../deadletter/store.js';
import type { LinePieces } from '../deadletter/from-batch.js';
import type { CountLog } from './count-log.js';
import { RetryStreak } from './retry-streak.js';
import { SplitLog } from './split-log.js';
import type { Clock } from '../util/clock.js';

/** Where a batch's refused lines are stored (Pipeline.deadLetterLines). */
export interface BatchDeadLetters {
  /** `stored` of the `lines` (the rest the full store dropped). */
  deadLetterLines(batchId: number, ds: string, pieces: LinePieces, reason: DeadLetterReason, status: number | null): Promise<{ stored: number; lines: number }>;
}

const DEAD_LETTERS_WRITTEN = 'lines moved to the dead-letter store';

export class SenderEvents implements SenderHooks {
  /** Each Data Source's last failure (an error code and message, or an HTTP status), until an acknowledgement. */
  readonly lastError = new Map<string, string>();
  private readonly streak: RetryStreak;
  private readonly splits: SplitLog;

  constructor(
    private readonly o: {
      metrics: Metrics;
      log: Logger;
      clock: Clock;
      counts: CountLog;
      /** batch.max_bytes: the 413 episode's start names it; a learned limit back at it is an INFO. */
      maxBatchBytes: number;
      /** The API's address, password redacted, for the retry log. */
      api: () => string;
      /** The Data Sources parked now (the sender's), to set the per-reason gauge. */
      parkedDataSources: () => ReadonlyMap<string, DsParkReason>;
      /** The budget or a Data Source was parked or unparked (the reader's room changes: pipeline.ts paused). */
      onParkMoved?: () => void;
      deadLetters: BatchDeadLetters;
    },
  ) {
    this.streak = new RetryStreak(() => o.log, o.clock);
    this.splits = new SplitLog({ clock: o.clock, log: () => o.log, maxBatchBytes: o.maxBatchBytes });
  }

  onRequest(ds: string, status: number | 'error', seconds: number, wireBytes: number, outcome: SendOutcome): void {
    const { metrics } = this.o;
    metrics.requests.inc({ datasource: ds, status: String(status) });
    metrics.requestDuration.observe(seconds);
    metrics.bytesSent.inc({ datasource: ds }, wireBytes);
    if (outcome.kind === 'error') this.lastError.set(ds, `${outcome.code}: ${outcome.message}`);
    else if (outcome.status >= 300) this.lastError.set(ds, `HTTP ${outcome.status}${outcome.location ? ` to ${outcome.location}` : ''}`);
  }

  onRetry(reason: RetryReason, ds: string, cause?: string): void {
    this.o.metrics.retries.inc({ reason });
    // A 400 or 413 split is no failing request resent with the same bytes:
    // their episodes have their own events (onBisection, onSplit). Through
    // the streak, 3 bad lines among 2,000 logged 22 'retrying' WARNs (cause
    // null) and 22 'retry_streak_over', one pair per split and acknowledged
    // half; a 413 logged 'retrying' too, and the streak then ended at an
    // acknowledged piece of the cut batch.
    if (reason !== '400' && reason !== '413') this.streak.retry(reason, ds, cause, this.o.api());
  }

  onBisection(e: BisectionEvent): void {
    const { log } = this.o;
    if (e.phase === 'start') {
      log.warn(
        { event: 'bisection_started', datasource: e.ds, batch: e.batchId, status: 400, lines: e.lines, bytes: e.rawBytes },
        'the API refused a batch (HTTP 400): sending halves of it to find the refused lines, which go to the dead-letter store (rejected); the rest is stored',
      );
      return;
    }
    log.info(
      { event: 'bisection_over', datasource: e.ds, batch: e.batchId, outcome: e.outcome, requests: e.requests, lines_acked: e.linesAcked, lines_dead_lettered: e.linesDeadLettered },
      'the refused batch is resolved as far as it can be now',
    );
  }

  onSplit(e: SplitEvent): void {
    this.splits.on(e);
  }

  /** The agent's tick: a 413 episode over for long enough is logged (SplitLog). */
  tick(): void {
    this.splits.tick();
    this.streak.tick();
  }

  /** At stop: what is due to be logged, now. */
  flush(): void {
    this.splits.flush();
    this.streak.flush();
  }

  onAck(ds: string, lines: number, _rawBytes: number, quarantined: number): void {
    const { metrics } = this.o;
    metrics.linesAcked.inc({ datasource: ds }, lines);
    if (quarantined > 0) {
      metrics.rowsQuarantined.inc({ datasource: ds }, quarantined);
      this.o.counts.add('rows_quarantined', { datasource: ds }, quarantined, `the platform quarantined rows (stored in ${ds}_quarantine: not valid for the Data Source)`);
    }
    this.lastError.delete(ds);
    this.streak.success();
  }

  /**
   * One write and one event per batch (its lines together). A trickle of
   * refused lines, a line per batch, is not one WARN per line: the events
   * go through the count log (the first at once, with its batch; then one a
   * minute per Data Source and reason). Lines the full store dropped are
   * logged at once.
   */
  async deadLetterLines(root: RootBatch, parts: ReadonlyArray<{ part: Part; raw: Buffer }>, reason: 'rejected' | 'line_too_long' | 'materialized_view_error' | 'operator', status: number | null): Promise<void> {
    const { stored, lines } = await this.o.deadLetters.deadLetterLines(root.id, root.ds, parts.map((p) => ({ lineStart: p.part.lineStart, raw: p.raw })), reason, status);
    // `count`, as the reader's dead_letters_written says it; `lines` (the batch's lines for the store) stays for older readers of the log.
    const detail = { batch: root.id, status, lines };
    if (stored < lines) this.o.log.warn({ event: 'dead_letters_written', datasource: root.ds, reason, ...detail, count: stored, dropped: lines - stored }, DEAD_LETTERS_WRITTEN);
    else this.o.counts.add('dead_letters_written', { datasource: root.ds, reason }, stored, DEAD_LETTERS_WRITTEN, detail);
  }

  onOddAnswer(what: AckOddity | 'ignored_wait', ds: string, detail: string | null): void {
    this.o.metrics.oddAnswers.inc({ kind: what });
    this.streak.oddAnswer(what, ds, detail);
  }

  onCountsAddUp(_ds: string): void {
    this.streak.countsAddUp();
  }

  onInFlightLimit(limit: number): void {
    this.o.metrics.inFlightLimit.set(limit);
  }

  onInFlightBytes(bytes: number): void {
    this.o.metrics.inFlightBytes.set(bytes);
  }

  onLearnedLimit(bytes: number): void {
    const { metrics, log, maxBatchBytes } = this.o;
    metrics.learnedMaxBodyBytes.set(bytes);
    // Lowered only by a 413, whose episode (onSplit) names the limit: a WARN
    // per lowering was one per 413 answer.
    if (bytes >= maxBatchBytes) log.info({ event: 'learned_max_body', bytes }, 'request bodies may use batch.max_bytes again');
  }

  /** Its batches leave the reader's room: wake it as a park does. */
  onRefused(): void {
    this.o.onParkMoved?.();
  }

  onParkChange(scope: 'budget' | { ds: string }, reason: string | null, previous: string | null, detail: string | null, unconfirmed = false): void {
    const { metrics, log } = this.o;
    if (scope === 'budget') {
      if (previous) metrics.parked.set({ reason: previous }, 0);
      if (reason) metrics.parked.set({ reason }, 1);
    } else {
      // Several Data Sources may be parked for one reason: 1 while any is.
      const parked = new Set<string>(this.o.parkedDataSources().values());
      if (reason) parked.add(reason);
      for (const r of ['bad_request', 'datasource_rejected'] as const) metrics.parked.set({ reason: r }, parked.has(r) ? 1 : 0);
    }
    if (reason !== previous) this.o.onParkMoved?.();
    const where = scope === 'budget' ? { scope: 'budget' } : { datasource: scope.ds };
    // Still parked (a probe failed): said again, once a minute (park.ts).
    const still = reason !== null && reason === previous;
    if (unconfirmed && reason) {
      // Another Data Source's request under way may prove the token (this one does not exist): the ERROR waits for its answer.
      log.warn({ event: 'parked', ...where, reason, detail, unconfirmed: true }, 'parked, unconfirmed: another Data Source may yet prove the token; sending stopped, data kept');
    } else if (reason) {
      log.error({ event: 'parked', ...where, reason, detail, ...(still ? { still: true } : {}) }, `${still ? 'still parked' : 'parked'}: sending stopped, data kept; retrying every 60 s (SIGHUP retries now)`);
    }
    else log.info({ event: 'unparked', ...where, previous }, 'unparked: sending again');
  }
}
