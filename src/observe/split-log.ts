// The budget's 413 episode in the log (docs/answers.md, docs/metrics.md
// "Logs"): one WARN `split_started` when a 413 first cuts a batch, one INFO
// `split_over` with the totals when the batches it concerns are resolved,
// nothing per request. The sender's episode ends with its last batch; the
// disk queue's replay loops take the next queued batch a moment later (a
// queue write in between), and its 413 would start a new one. So an episode
// that starts within SPLIT_QUIET_MS of the last one's end continues it:
// `split_over` is logged on the agent's tick once that time has passed
// without a new start, and at stop. Without it, replaying 3 queued batches
// of 400 KB against a 150 KB limit logged two episodes in two runs of three.
import type { Logger } from '../log.js';
import type { SplitEvent } from '../sender/sender.js';
import type { Clock } from '../util/clock.js';

/** A 413 episode that starts this soon after the last one ended is the same episode. */
export const SPLIT_QUIET_MS = 2000;

type End = Extract<SplitEvent, { phase: 'end' }>;

export class SplitLog {
  /** The episode logged as started and not yet as over; `endedAt`: when the sender's last one ended, null while one runs. */
  private open: { batches: number; answers413: number; linesAcked: number; linesDeadLettered: number; last: End | null; endedAt: number | null } | null = null;

  constructor(
    private readonly o: {
      clock: Clock;
      log: () => Logger;
      /** batch.max_bytes, named in the start WARN. */
      maxBatchBytes: number;
    },
  ) {}

  on(e: SplitEvent): void {
    const open = this.open;
    if (e.phase === 'end') {
      if (!open) return;
      open.batches += e.batches;
      open.answers413 += e.answers413;
      open.linesAcked += e.linesAcked;
      open.linesDeadLettered += e.linesDeadLettered;
      open.last = e;
      open.endedAt = this.o.clock.now();
      return;
    }
    if (open) {
      // Right after the last one ended: the same episode goes on.
      open.endedAt = null;
      return;
    }
    this.open = { batches: 0, answers413: 0, linesAcked: 0, linesDeadLettered: 0, last: null, endedAt: null };
    this.o.log().warn(
      { event: 'split_started', datasource: e.ds, batch: e.batchId, status: 413, lines: e.lines, bytes: e.rawBytes, learned_max_body: e.learnedBytes, max_bytes: this.o.maxBatchBytes },
      'the API refused a request body as too large (HTTP 413): nothing of it was stored; batches are cut to learned_max_body bytes and the pieces sent (a single line still too large goes to the dead-letter store as line_too_long)',
    );
  }

  /** The agent's tick: `split_over` once the episode has been over for SPLIT_QUIET_MS. */
  tick(): void {
    const open = this.open;
    if (open?.endedAt != null && this.o.clock.now() - open.endedAt >= SPLIT_QUIET_MS) this.flush();
  }

  /** At stop: an episode over is logged now. */
  flush(): void {
    const open = this.open;
    if (!open?.last || open.endedAt === null) return;
    this.open = null;
    this.o.log().info(
      {
        event: 'split_over',
        outcome: open.last.outcome,
        batches: open.batches,
        answers_413: open.answers413,
        lines_acked: open.linesAcked,
        lines_dead_lettered: open.linesDeadLettered,
        learned_max_body: open.last.learnedBytes,
      },
      'the batches refused as too large are resolved as far as they can be now; batches stay cut to learned_max_body bytes, which grows back 10 % per 5 minutes to batch.max_bytes',
    );
  }
}
