// The 413 episode, for the log (docs/answers.md, docs/metrics.md "Logs").
// A 413 is no failing request resent with the same bytes: nothing was
// stored, the batch is cut into new, smaller bodies, and the learned limit
// it teaches is the whole budget's (learned-limit.ts). So the cutting is one
// episode of the budget, not a retry streak and not one story per request:
// it starts at the first 413 that cuts a batch and ends when every batch it
// concerns is resolved, with totals. Through the retry streak, each 413
// logged a 'retrying' WARN ("resent with the same bytes") and a
// learned-limit WARN.
//
// The batches it concerns: those that got a 413 while it lasts, and those
// being delivered that must be sent whole although they are over the learned
// limit (sent before: never cut before a 413, docs/guarantees.md rule 3), so
// a backlog of queued batches waiting behind the first one does not end and
// restart the episode at each batch. A 413 after the end starts a new one.
// At most the deliveries under way are held.
import type { LearnedLimit } from './learned-limit.js';
import type { DeliveryCtx, DeliveryResult, Part, SplitEvent } from './types.js';

export class SplitEpisode {
  private readonly members = new Set<DeliveryCtx>();
  private open = false;
  private answers413 = 0;
  private batches = 0;
  private linesAcked = 0;
  private linesDeadLettered = 0;
  private outcome: DeliveryResult = 'done';

  constructor(
    private readonly o: {
      learned: LearnedLimit;
      /** The deliveries under way. */
      deliveries: () => Iterable<DeliveryCtx>;
      raise: (e: SplitEvent) => void;
    },
  ) {}

  /** A 413 for a piece of this delivery (after the learned limit was lowered for it). A piece of several lines opens the episode. */
  refused(ctx: DeliveryCtx, part: Part): void {
    if (!this.open) {
      // A single line too long is no cut: its dead letter is its log.
      if (part.lines <= 1) return;
      this.open = true;
      this.o.raise({ phase: 'start', batchId: ctx.root.id, ds: part.ds, lines: part.lines, rawBytes: part.rawLen, learnedBytes: this.o.learned.capFor() });
      for (const d of this.o.deliveries()) if (this.mustGoWhole(d)) this.join(d);
    }
    this.answers413++;
    this.join(ctx);
  }

  /** A delivery starts: while the episode lasts, a batch that will be sent whole over the learned limit is part of it. */
  started(ctx: DeliveryCtx): void {
    if (this.open && this.mustGoWhole(ctx)) this.join(ctx);
  }

  acked(ctx: DeliveryCtx, lines: number): void {
    if (this.members.has(ctx)) this.linesAcked += lines;
  }

  deadLettered(ctx: DeliveryCtx, lines: number): void {
    if (this.members.has(ctx)) this.linesDeadLettered += lines;
  }

  /** A delivery ended: the last of the episode's ends it. */
  ended(ctx: DeliveryCtx, result: DeliveryResult): void {
    if (!this.members.delete(ctx)) return;
    if (result !== 'done') this.outcome = result;
    if (this.members.size > 0) return;
    const { answers413, batches, linesAcked, linesDeadLettered, outcome } = this;
    this.o.raise({ phase: 'end', outcome, batches, answers413, linesAcked, linesDeadLettered, learnedBytes: this.o.learned.capFor() });
    this.open = false;
    this.answers413 = this.batches = this.linesAcked = this.linesDeadLettered = 0;
    this.outcome = 'done';
  }

  private join(ctx: DeliveryCtx): void {
    if (this.members.has(ctx)) return;
    this.members.add(ctx);
    this.batches++;
  }

  private mustGoWhole(ctx: DeliveryCtx): boolean {
    return !this.o.learned.mayCut(ctx) && ctx.root.rawLen > this.o.learned.capFor();
  }
}
