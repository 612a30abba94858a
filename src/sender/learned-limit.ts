// The 413 learned limit (README "How each server answer is handled"). A 413
// means nothing of the body was stored: from then on every batch of the
// budget is cut to at most half the rejected size, never below
// MIN_LEARNED_BYTES, and sent one request at a time until a success (the
// sender narrows its in-flight bound: onLower). Without another 413 the limit
// grows back 10 % per 5 minutes until it reaches max_bytes and is forgotten.
// One limit for the whole budget: the platform's plan limit is not per Data
// Source.
//
// A piece over the limit is cut before it is sent only while nothing of it
// can have been stored (docs/guarantees.md rule 3: a retry sends exactly the
// same bytes as the first attempt).
import type { Clock } from '../util/clock.js';
import { BudgetMemory } from './budget-memory.js';
import type { Verdict } from './retry-policy.js';
import type { DeliveryCtx, Part } from './types.js';

/** After a 413 the learned size limit grows back by 10 % per 5 minutes without another 413. */
export const LEARNED_GROWTH = 1.1;
export const LEARNED_GROWTH_PERIOD_MS = 5 * 60 * 1000;
/** A floor only against absurd sizes: a server may limit bodies to less than batch.max_bytes' 1 KB minimum (the emulator's --max-body). */
export const MIN_LEARNED_BYTES = 64;
export interface LearnedLimitOptions {
  clock: Clock;
  /** batch.max_bytes: the limit when none is learned, and the most it grows back to. */
  maxBytes: number;
  /** A 413 lowered the limit: one request at a time until a success. */
  onLower: () => void;
  /** The learned limit changed (max_bytes when none is learned). */
  onChange: (bytes: number) => void;
  /** Holds the limit (`learned`): the process keeps it across a reload's new sender. */
  memory?: BudgetMemory;
}

export class LearnedLimit {
  private readonly memory: BudgetMemory;
  /** The limit last told to onChange. */
  private told: number;

  constructor(private readonly o: LearnedLimitOptions) {
    this.told = o.maxBytes;
    this.memory = o.memory ?? new BudgetMemory();
  }

  /**
   * Size cap for new batches: max_bytes, or lower after a 413; it grows back
   * 10 % per 5 minutes without a 413.
   */
  capFor(): number {
    const l = this.memory.learned;
    if (!l) return this.o.maxBytes;
    const periods = Math.floor((this.o.clock.now() - l.since) / LEARNED_GROWTH_PERIOD_MS);
    const bytes = Math.floor(l.bytes * LEARNED_GROWTH ** periods);
    if (bytes < this.o.maxBytes) {
      // Each step of the growth is told once (the gauge follows it).
      if (bytes !== this.told) this.tell(bytes);
      return bytes;
    }
    this.memory.learned = null;
    this.tell(this.o.maxBytes);
    return this.o.maxBytes;
  }

  private tell(bytes: number): void {
    this.told = bytes;
    this.o.onChange(bytes);
  }

  /**
   * The piece is larger than the learned limit and may still be cut: none of
   * its batch's attempts has an unknown outcome, so nothing of it can have
   * been stored and a retry need not be byte-identical.
   */
  overLearned(part: Pick<Part, 'lines' | 'rawLen'>, ctx: Pick<DeliveryCtx, 'opts' | 'unknownOutcome'>): boolean {
    return this.mayCut(ctx) && part.lines > 1 && part.rawLen > this.capFor();
  }

  /** Nothing of the batch can have been stored yet: it may be cut before a 413 (a batch sent before goes whole until a 413 says nothing was stored). */
  mayCut(ctx: Pick<DeliveryCtx, 'opts' | 'unknownOutcome'>): boolean {
    return ctx.opts.neverSent === true && !ctx.unknownOutcome;
  }

  /** A 413: nothing was stored. Every later batch of the budget respects half the rejected size at once; one request at a time until a success. */
  lower(rejectedRawLen: number): void {
    const bytes = Math.max(MIN_LEARNED_BYTES, Math.min(this.capFor(), Math.floor(rejectedRawLen / 2)));
    this.memory.learned = { bytes, since: this.o.clock.now() };
    this.o.onLower();
    this.tell(bytes);
  }

}
