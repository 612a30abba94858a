// The deliveries under way and the batch histories (sender/deliveries.ts):
// what `queue list` shows and how `queue dead-letter` releases a batch.
import { describe, expect, it } from 'vitest';
import { Deliveries, newCtx } from '../../src/sender/deliveries.js';
import { Notifier } from '../../src/sender/notifier.js';
import type { RootBatch } from '../../src/sender/types.js';
import { ManualClock } from '../support/manual-clock.js';

function root(id: number, ds = 'ds'): RootBatch {
  return { id, ds, body: Buffer.from('{}\n'), encoding: null, rawLen: 3, lines: 1 };
}

function deliveries() {
  const clock = new ManualClock();
  return { clock, d: new Deliveries(clock, new Notifier()) };
}

describe('Deliveries', () => {
  it('held() lists the deliveries under way, oldest first, with their park and history', () => {
    const { clock, d } = deliveries();
    d.start(newCtx(root(1, 'a'), {}, clock.now()));
    d.start(newCtx(root(2, 'b'), {}, clock.now() + 5));
    d.historyOf(2).attempts = 3;
    const held = d.held((ds) => ds === 'b');
    expect(held.map((h) => [h.root.id, h.parked, h.since - clock.now(), h.history.attempts])).toEqual([
      [1, false, 0, 0],
      [2, true, 5, 3],
    ]);
    expect(d.hasDataSource('b')).toBe(true);
    expect(d.hasDataSource('c')).toBe(false);
  });

  it('a history outlives its delivery (the batch waits in the disk queue) until it is forgotten', () => {
    const { clock, d } = deliveries();
    const ctx = newCtx(root(7), {}, clock.now());
    d.start(ctx);
    Object.assign(d.historyOf(7), { attempts: 2, lastStatus: 503, lastError: 'HTTP 503' });
    d.end(ctx);
    expect(d.size).toBe(0);
    expect(d.history(7)).toEqual({ attempts: 2, lastStatus: 503, lastError: 'HTTP 503' });
    d.forget(7);
    expect(d.history(7)).toBeNull();
  });

  it('release() aborts the delivery and resolves with the lines moved once it ends done; null for a batch not being delivered', async () => {
    const { clock, d } = deliveries();
    expect(d.release(1)).toBeNull();
    const ctx = newCtx(root(1), {}, clock.now());
    d.start(ctx);
    const release = d.release(1)!;
    expect(ctx.released).toBe(true);
    expect(ctx.ac.signal.aborted).toBe(true);
    const moved = release.wait();
    Object.assign(ctx, { releasedLines: 12, result: 'done' });
    d.end(ctx);
    clock.advance(60_000);
    expect(await moved).toBe(12);
  });

  it("release() resolves 'aborted' when the sender stopped first", async () => {
    const { clock, d } = deliveries();
    const ctx = newCtx(root(1), {}, clock.now());
    d.start(ctx);
    const moved = d.release(1)!.wait();
    ctx.result = 'aborted';
    clock.advance(60_000);
    expect(await moved).toBe('aborted');
  });
});
