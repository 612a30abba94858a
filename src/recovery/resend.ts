// What the state says must be sent again, sent again (docs/guarantees.md,
// "After a crash" and "Integrity of state"):
// - batches recorded (an intent) and not done at the last stop: re-formed
//   from their file ranges, byte for byte (reform.ts), and sent before new
//   data;
// - queued batches the queue can no longer read (a damaged record): read
//   again from the spool when every range still has the CRC it had when
//   queued, else counted in spoolship_lines_lost_total{reason="queue_corrupt"}.
//   Never silent either way.
import type { ClosedBatch } from '../batcher/batcher.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import type { RetryQueue } from '../queue/retry-queue.js';
import type { StateWrites } from '../state/acker.js';
import type { StateStore } from '../state/store.js';
import type { Clock } from '../util/clock.js';
import type { LongLived } from '../util/lifecycle.js';
import { copyFinder, rangeCrcs, reformBatch } from './reform.js';

/** Where recovered batches go: the pipeline, after waiting for room like the reader. */
export interface RecoveredSink {
  /** Resolves when there is room, or at once once `signal` is aborted. */
  waitForRoom(signal?: AbortSignal): Promise<void>;
  submitRecovered(batch: ClosedBatch): void;
}

/**
 * A kill -9 after a batch was queued durably and before its journal ack was
 * group-committed leaves it both queued and an open intent: it is sent from
 * the queue, so its intent is completed instead of re-formed.
 */
export async function completeQueuedIntents(store: StateStore, queue: Pick<RetryQueue, 'batchIds'>): Promise<void> {
  const queued = await queue.batchIds();
  // A state rebuilt from the journals may not know the queue's ids: new batches never take one.
  store.reserveIds(queued);
  if (queued.size === 0) return;
  const rec = store.recovery;
  for (const i of rec.intents) if (queued.has(i.id)) store.completeBatch(i.id);
  rec.intents = rec.intents.filter((i) => !queued.has(i.id));
}

export class Resender implements LongLived {
  private checking: Promise<void> | null = null;
  private checkAgain = false;
  private closed = false;

  constructor(
    private readonly o: {
      store: StateStore;
      queue: RetryQueue;
      sink: RecoveredSink;
      writes: StateWrites;
      metrics: Metrics;
      log: Logger;
      clock: Clock;
      /** The path of a file key of the state (the state's, or the tailer's). */
      pathOf: (key: string) => string | undefined;
      /** A damaged queue record's batch is gone: its delivery history goes too. */
      sender: { forget(id: number): void };
      /** The queue's segment files where damaged records were found (the ERROR names them). */
      damagedQueueFiles: ReadonlySet<string>;
      onFatal: (err: unknown) => void;
      /**
       * A stop asked for while the agent starts: the re-sending ends there
       * (an outage with the queue full gave the pipeline no room, and the
       * stop waited for the start for good); the batches not re-sent yet stay
       * in the journal for the next start.
       */
      stop?: AbortSignal;
    },
  ) {}

  /** Batches in flight at the last stop: re-formed from their ranges, sent before new data. */
  async resendUnacknowledged(): Promise<void> {
    const { store, log } = this.o;
    const intents = store.recovery.intents;
    if (intents.length === 0) return;
    log.info({ event: 'resending_unacknowledged', batches: intents.length }, 'resending batches that were unacknowledged at the last stop');
    const copies = copyFinder();
    for (const intent of intents) {
      const r = await reformBatch(intent.ranges, this.o.pathOf, (k) => store.metaOf(k), copies);
      for (const [file, copy] of r.fromCopies) log.info({ event: 'resend_from_copy', datasource: intent.ds, batch: intent.id, file, copy }, "an unacknowledged batch's bytes are gone from its file but kept in a copy of it (copytruncate): re-formed from the copy");
      if (r.missing.length > 0) {
        // Unknown for intents written before they kept their line count.
        const lost = intent.lines === undefined ? null : Math.max(0, intent.lines - r.lines);
        if (lost) this.o.metrics.linesLost.inc({ datasource: intent.ds, reason: 'file_gone' }, lost);
        log.error(
          {
            event: 'resend_files_gone',
            datasource: intent.ds,
            batch: intent.id,
            ranges: r.missing.map((m) => [this.o.pathOf(m.file) ?? m.file, m.start, m.end]),
            changed: r.changed,
            lines_lost: lost,
          },
          'bytes of an unacknowledged batch are gone from its files (deleted, truncated, or other lines there now); those lines cannot be resent',
        );
      }
      await this.o.sink.waitForRoom(this.o.stop);
      if (this.o.stop?.aborted) return;
      this.o.sink.submitRecovered({ id: intent.id, ds: intent.ds, body: r.body, lines: r.lines, firstAt: this.o.clock.now() });
    }
  }

  /**
   * Look for queued batches the queue can no longer read (at start, and
   * whenever the queue skips a damaged record). One check at a time; a
   * record found damaged during a check makes one more check after it.
   */
  checkQueue(): void {
    if (this.closed) return;
    if (this.checking) {
      this.checkAgain = true;
      return;
    }
    this.checking = this.recoverUnreadableQueued()
      .catch((err) => this.o.onFatal(err))
      .finally(() => {
        this.checking = null;
        if (this.checkAgain) {
          this.checkAgain = false;
          this.checkQueue();
        }
      });
  }

  /** No new checks; resolves when the one under way has ended. */
  async close(): Promise<void> {
    this.closed = true;
    await this.checking;
  }

  /** The same: a check writes its outcome through the state store, which a destroyed agent no longer flushes. */
  destroy(): Promise<void> {
    return this.close();
  }

  private async recoverUnreadableQueued(): Promise<void> {
    const { store, metrics, log } = this.o;
    const readable = await this.o.queue.batchIds();
    const metaOf = (k: string) => store.metaOf(k);
    for (const q of store.queuedIntents()) {
      if (readable.has(q.id)) continue;
      const ranges = q.ranges.map(({ crc: _crc, ...r }) => r);
      const now = await rangeCrcs(ranges, this.o.pathOf, metaOf);
      const intact = q.ranges.length > 0 && q.ranges.every((r, i) => r.crc !== null && now[i] === r.crc);
      const where = {
        event: 'queue_corrupt',
        files: [...this.o.damagedQueueFiles],
        datasource: q.ds,
        batch: q.id,
        lines: q.lines,
        ranges: ranges.map((r) => [this.o.pathOf(r.file) ?? r.file, r.start, r.end]),
      };
      if (!intact) {
        store.completeQueued(q.id);
        this.o.sender.forget(q.id);
        metrics.linesLost.inc({ datasource: q.ds, reason: 'queue_corrupt' }, q.lines);
        log.error({ ...where, recovered: false }, 'a queue record is damaged and its lines are no longer the same in the spool (or gone): these lines are lost');
        continue;
      }
      // The resend's intent keeps the queued CRCs: a crash before it is acknowledged re-forms it only from the same bytes.
      const info = await this.o.writes.retryStateWrite(() => store.recordResend(q.ds, q.ranges.map(({ crc, ...r }) => (crc === null ? r : { ...r, crc })), q.lines));
      store.completeQueued(q.id);
      this.o.sender.forget(q.id);
      log.error({ ...where, recovered: true }, 'a queue record is damaged; its lines are read again from the spool (unchanged since they were queued) and sent');
      const r = await reformBatch(info.ranges, this.o.pathOf, metaOf);
      await this.o.sink.waitForRoom();
      this.o.sink.submitRecovered({ id: info.id, ds: q.ds, body: r.body, lines: r.lines, firstAt: this.o.clock.now() });
    }
  }
}
