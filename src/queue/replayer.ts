// Sends queued batches again, oldest first, a few at a time, with the exact
// bytes they were queued with. A delivered (or dead-lettered) batch is
// acknowledged in the queue; when the agent stops, a batch being sent is
// handed back and stays queued for the next start.
//
// A parked Data Source (datasource_rejected, bad_request) does not hold a
// loop: its batches stay queued and are passed over until its probe is due
// (one of them is then the probe), so the other Data Sources' batches behind
// them go on. A parked budget (token_rejected...) stops every Data Source
// alike: the loops wait inside the sender, one of them the budget's probe.
import type { Logger } from '../log.js';
import type { Clock } from '../util/clock.js';
import type { LongLived } from '../util/lifecycle.js';
import type { Part, Sender } from '../sender/sender.js';
import type { RetryQueue } from './retry-queue.js';
import type { StateWrites } from '../state/acker.js';

/**
 * The agent stopped while a queued batch was being cut by 400s and some of it
 * was acknowledged: queue what is left as records of their own; true when
 * written, and the record goes (Pipeline implements it).
 */
export interface PieceKeeper {
  keepPieces(id: number, pieces: Part[]): Promise<boolean>;
}

/** Queued batches in flight at once: leaves the rest of max_in_flight to fresh data. */
export const REPLAY_CONCURRENCY = 2;
/** The platform deduplicates a retried partial insert for 5 hours. */
export const DEDUP_WINDOW_MS = 5 * 60 * 60 * 1000;

export class QueueReplayer implements LongLived {
  private stopped = false;
  private waiters: Array<() => void> = [];
  /** poke()s so far: a loop idles only if none came while it looked. */
  private pokes = 0;
  private loops: Promise<void>[] = [];
  private warnedOld = false;
  /** destroy(): the deliveries under way end at once. */
  private readonly abort = new AbortController();

  constructor(
    private readonly o: {
      queue: RetryQueue;
      sender: Sender;
      clock: Clock;
      log: Logger;
      onChange: () => void;
      /**
       * A queued batch is done (acknowledged or dead-lettered): the state
       * forgets it, durably, before the queue's ack (resolved once written).
       */
      onDelivered: (id: number) => void | Promise<void>;
      /** Where what is left of a queued batch cut by 400s goes at a stop (absent: it stays queued whole). */
      pieceKeeper?: PieceKeeper;
      onPastDedupWindow: () => void;
      /** Runs each state write, waiting out a full or read-only state_dir (state/acker.ts). */
      writes: StateWrites;
      onFatal: (err: unknown) => void;
    },
  ) {}

  start(): void {
    for (let i = 0; i < REPLAY_CONCURRENCY; i++) this.loops.push(this.loop().catch((err) => this.o.onFatal(err)));
  }

  /** Something was queued. */
  poke(): void {
    this.pokes++;
    for (const w of this.waiters.splice(0)) w();
  }

  /** Take no more batches; resolves when the deliveries under way have ended (the sender's close ends them). Their batches stay queued. */
  async close(): Promise<void> {
    this.stopped = true;
    this.poke();
    await Promise.all(this.loops);
  }

  /** Take no more batches and end the deliveries under way now (a request on the wire is answered first); their batches stay queued. */
  destroy(): Promise<void> {
    this.abort.abort();
    return this.close();
  }

  private async loop(): Promise<void> {
    const { queue, sender } = this.o;
    while (!this.stopped) {
      // Taken before looking: a record queued, or a park changed, while take() looks is not missed.
      const pokes = this.pokes;
      const changed = sender.changeSignal();
      let parkedFor = Infinity;
      const rec = await queue.take((ds) => {
        // A parked Data Source's batches wait for its probe, and while the budget is parked every batch waits for the
        // budget's, but one the early probe is on offer to (a 403 before any Data Source proved the token: docs/answers.md).
        const ms = Math.max(sender.dsWaitMs(ds), sender.budgetPark.holdsBack(ds) ? sender.budgetPark.probeWaitMs() : 0);
        if (ms > 0) parkedFor = Math.min(parkedFor, ms);
        return ms > 0;
      });
      if (!rec) {
        await this.idle(parkedFor, pokes, changed);
        continue;
      }
      if (this.o.clock.now() - rec.header.queuedAt > DEDUP_WINDOW_MS) {
        this.o.onPastDedupWindow();
        if (!this.warnedOld) {
          this.warnedOld = true;
          this.o.log.warn({ event: 'queued_past_dedup_window', datasource: rec.header.ds }, 'sending a queued batch older than 5 hours: the platform no longer deduplicates its retries');
        }
      }
      let unresolved: Part[] | null = null;
      const result = await sender.deliver(
        {
          id: rec.header.id,
          ds: rec.header.ds,
          body: rec.body,
          encoding: rec.header.encoding,
          rawLen: rec.header.rawLen,
          lines: rec.header.lines,
        },
        { leaveWhenDsParked: true, signal: this.abort.signal, onUnresolved: this.o.pieceKeeper && ((pieces) => (unresolved = pieces)) },
      );
      if (unresolved && (await this.o.pieceKeeper!.keepPieces(rec.header.id, unresolved))) {
        // Its acknowledged pieces must not be sent again: what is left is queued anew, the record goes.
        await this.o.writes.retryStateWrite(async () => this.o.onDelivered(rec.header.id));
        await this.o.writes.retryStateWrite(() => queue.ack(rec.ref));
        this.o.onChange();
      } else if (result === 'done') {
        // ENOSPC here is the disk_full state, as anywhere: wait for space.
        // The state forgets the queued batch first, durably: a kill -9 after
        // the queue's ack and before the journal's group commit left a batch
        // the state still listed as queued and the queue no longer had, which
        // the next start reported as a damaged record (ERROR queue_corrupt,
        // its lines sent again or counted lost).
        await this.o.writes.retryStateWrite(async () => this.o.onDelivered(rec.header.id));
        await this.o.writes.retryStateWrite(() => queue.ack(rec.ref));
        this.o.onChange();
      } else {
        // Stopping, or its Data Source is parked: it stays queued.
        queue.release(rec.ref);
      }
    }
  }

  /**
   * Nothing to take: wait for a new record, or (when batches of parked Data
   * Sources were passed over) for a park to change or the next probe to be due.
   */
  private async idle(parkedFor: number, pokes: number, changed: AbortSignal): Promise<void> {
    if (this.pokes !== pokes || this.stopped) return;
    let wake!: () => void;
    const poked = new Promise<void>((resolve) => (wake = resolve));
    this.waiters.push(wake);
    if (Number.isFinite(parkedFor)) await Promise.race([poked, this.o.clock.sleep(parkedFor, changed)]);
    else await poked;
    this.waiters = this.waiters.filter((w) => w !== wake);
  }
}
