// DESIGN: a batch closes at max_bytes or linger_ms, "or sooner when the
// limiter has budget and nothing else waits". The batcher's rule for
// "sooner": the remainder of a backlog (a batch that continues one closed
// full) goes once its Data Source is quiet and read to its end; a steady
// tail's batches never close full, so they keep lingering.
import { describe, expect, it } from 'vitest';
import { Batcher, type ClosedBatch } from '../../src/batcher/batcher.js';
import { Progress } from '../../src/state/progress.js';

function setup() {
  const progress = new Progress();
  for (const ds of ['backlog', 'trickle']) progress.addFile({ key: ds, dev: 1, ino: ds.length, gen: 0, fp: '', fpLen: 0, path: `/${ds}`, ds }, 0);
  let now = 1_000;
  let id = 1;
  const closed: ClosedBatch[] = [];
  const batcher = new Batcher({
    progress,
    batchIds: { newBatchId: () => id++ },
    now: () => now,
    maxBytes: 100,
    maxLineBytes: 100,
    maxOpenBytes: 10_000,
    validateJson: false,
    sizeCaps: { capFor: () => 100 },
    onClose: (b) => closed.push({ ...b, body: Buffer.from(b.body) }),
    onDeadLetter: () => undefined,
  });
  const offsets = new Map<string, number>();
  const append = (ds: string, lines: number) => {
    const buf = Buffer.from('{"n":123456789}\n'.repeat(lines)); // 16 bytes a line
    const at = offsets.get(ds) ?? 0;
    batcher.append({ key: ds, ds, path: `/${ds}` }, buf, 0, buf.length, at);
    offsets.set(ds, at + buf.length);
  };
  return { batcher, closed, append, advance: (ms: number) => (now += ms) };
}

describe('closing the last partial batch of a backlog', () => {
  it('closes the remainder after a full batch once the Data Source is quiet and read to its end', () => {
    const { batcher, closed, append, advance } = setup();
    append('backlog', 8); // 128 bytes: one full batch of 96 (6 lines), 2 lines left open
    expect(closed.map((b) => b.lines)).toEqual([6]);
    batcher.closeDrained(50, () => true);
    expect(closed).toHaveLength(1); // appended just now: not quiet yet
    advance(50);
    batcher.closeDrained(50, () => false);
    expect(closed).toHaveLength(1); // a file of it still has unread bytes
    batcher.closeDrained(50, () => true);
    expect(closed.map((b) => b.lines)).toEqual([6, 2]);
  });

  it('leaves a steady tail to linger_ms, and the batch after an early close lingers again', () => {
    const { batcher, closed, append, advance } = setup();
    append('trickle', 1);
    advance(10_000);
    batcher.closeDrained(50, () => true);
    expect(closed).toHaveLength(0); // never closed full: lingers
    batcher.closeExpired(1_000);
    expect(closed.map((b) => [b.ds, b.lines])).toEqual([['trickle', 1]]);

    append('backlog', 8);
    advance(60);
    batcher.closeDrained(50, () => true);
    expect(closed.map((b) => b.lines)).toEqual([1, 6, 2]);
    append('backlog', 1); // new data after the early close: an ordinary batch again
    advance(60);
    batcher.closeDrained(50, () => true);
    expect(closed).toHaveLength(3);
  });
});
