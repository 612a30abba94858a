// When open batches close on time (README "How it works"): every tick, a
// batch open for linger_ms closes, and so does the last partial batch of a
// backlog once its Data Source is read to the end and quiet for
// drainQuietMs (also checked drainQuietMs after the reader goes idle, so a
// backlog's last request leaves ~25 ms after its last read instead of one
// to two ticks later). While every send slot is taken (the rate limit
// binds) nothing closes on time: open batches grow toward max_bytes instead
// of becoming more small requests. All on the injected clock.
import type { ReaderIdle } from '../observe/spool-events.js';
import { after, type Clock } from '../util/clock.js';
import type { LongLived } from '../util/lifecycle.js';

/** Quiet time before the last partial batch of a backlog goes (at most one tick). */
export const DRAIN_QUIET_MS = 25;
/** The tick: a quarter of linger_ms, between these bounds. */
export const MIN_TICK_MS = 10;
export const MAX_TICK_MS = 100;

export interface LingeringBatches {
  closeExpired(lingerMs: number): void;
  closeDrained(quietMs: number, caughtUp: (ds: string) => boolean): void;
}

/** What the linger asks of the pipeline (Pipeline implements it). */
export interface SendSlots {
  /** True while every send slot is taken: nothing closes on time. */
  readonly saturated: boolean;
}

export class Linger implements LongLived, ReaderIdle {
  readonly tickMs: number;
  readonly drainQuietMs: number;
  /** Cancels the pending drain check, or null. */
  private drainCheck: (() => void) | null = null;
  private stopped = false;

  constructor(
    private readonly batches: LingeringBatches,
    private readonly o: {
      clock: Clock;
      lingerMs: number;
      slots: SendSlots;
      /** Every file of the Data Source is read to its known end (Spooler.caughtUp). */
      caughtUp: (ds: string) => boolean;
    },
  ) {
    this.tickMs = Math.max(MIN_TICK_MS, Math.min(MAX_TICK_MS, o.lingerMs / 4));
    this.drainQuietMs = Math.min(DRAIN_QUIET_MS, this.tickMs);
  }

  tick(): void {
    if (this.o.slots.saturated) return;
    this.batches.closeExpired(this.o.lingerMs);
    this.batches.closeDrained(this.drainQuietMs, this.o.caughtUp);
  }

  /** The reader went idle: look for a drained backlog once it has been quiet for drainQuietMs. */
  readerIdle(): void {
    if (this.drainCheck || this.stopped) return;
    this.drainCheck = after(this.o.clock, this.drainQuietMs, () => {
      this.drainCheck = null;
      if (!this.o.slots.saturated) this.batches.closeDrained(this.drainQuietMs, this.o.caughtUp);
    });
  }

  /** No more closing on time (the batches themselves are the batcher's). */
  async close(): Promise<void> {
    this.stopped = true;
    this.drainCheck?.();
    this.drainCheck = null;
  }

  destroy(): Promise<void> {
    return this.close();
  }
}
