// The 413 episode's log lines (observe/split-log.ts) on a manual clock: one
// WARN at the start, one INFO with the totals once the episode has been over
// for SPLIT_QUIET_MS; a sender episode starting sooner than that continues it.
import { describe, expect, it } from 'vitest';
import type { Logger } from '../../src/log.js';
import { SPLIT_QUIET_MS, SplitLog } from '../../src/observe/split-log.js';
import type { SplitEvent } from '../../src/sender/sender.js';
import { ManualClock } from '../support/manual-clock.js';

function recorder() {
  const lines: Array<Record<string, unknown>> = [];
  const log = { warn: (o: Record<string, unknown>) => lines.push({ level: 'warn', ...o }), info: (o: Record<string, unknown>) => lines.push({ level: 'info', ...o }) } as unknown as Logger;
  return { lines, log };
}

const start = (batchId: number): SplitEvent => ({ phase: 'start', batchId, ds: 'ev', lines: 2000, rawBytes: 400_000, learnedBytes: 200_000 });
const end = (n: number, learnedBytes: number): SplitEvent => ({ phase: 'end', outcome: 'done', batches: n, answers413: 3 * n, linesAcked: 2000 * n, linesDeadLettered: n - 1, learnedBytes });

describe('SplitLog', () => {
  it('logs the start at once and the end once it has held for SPLIT_QUIET_MS, with the totals of the episodes that followed each other within it', () => {
    const clock = new ManualClock();
    const r = recorder();
    const s = new SplitLog({ clock, log: () => r.log, maxBatchBytes: 1_000_000 });
    s.on(start(1));
    expect(r.lines).toEqual([{ level: 'warn', event: 'split_started', datasource: 'ev', batch: 1, status: 413, lines: 2000, bytes: 400_000, learned_max_body: 200_000, max_bytes: 1_000_000 }]);
    s.on(end(1, 100_000));
    clock.advance(SPLIT_QUIET_MS - 1);
    s.tick();
    // The disk queue's next batch, a moment later: the same episode, no second WARN.
    s.on(start(2));
    clock.advance(SPLIT_QUIET_MS);
    s.tick();
    expect(r.lines, 'still going on').toHaveLength(1);
    s.on(end(2, 90_000));
    clock.advance(SPLIT_QUIET_MS - 1);
    s.tick();
    expect(r.lines).toHaveLength(1);
    clock.advance(1);
    s.tick();
    expect(r.lines[1]).toEqual({ level: 'info', event: 'split_over', outcome: 'done', batches: 3, answers_413: 9, lines_acked: 6000, lines_dead_lettered: 1, learned_max_body: 90_000 });
    s.tick();
    expect(r.lines).toHaveLength(2);
    // Later: a new episode, a new WARN.
    s.on(start(3));
    expect(r.lines).toHaveLength(3);
    expect(r.lines[2]).toMatchObject({ event: 'split_started', batch: 3 });
  });

  it('at stop, an episode over is logged at once; one still going on is not', () => {
    const clock = new ManualClock();
    const r = recorder();
    const s = new SplitLog({ clock, log: () => r.log, maxBatchBytes: 1_000_000 });
    s.on(start(1));
    s.flush();
    expect(r.lines.map((l) => l.event)).toEqual(['split_started']);
    s.on({ phase: 'end', outcome: 'aborted', batches: 1, answers413: 1, linesAcked: 0, linesDeadLettered: 0, learnedBytes: 200_000 });
    s.flush();
    expect(r.lines.map((l) => l.event)).toEqual(['split_started', 'split_over']);
    expect(r.lines[1]).toMatchObject({ outcome: 'aborted', batches: 1 });
  });
});
