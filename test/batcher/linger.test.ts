// When open batches close on time, on a manual clock: the tick's period
// from linger_ms, nothing closing while the pipeline is saturated, and one
// drain check drainQuietMs after the reader goes idle.
import { describe, expect, it } from 'vitest';
import { DRAIN_QUIET_MS, Linger, MAX_TICK_MS, MIN_TICK_MS } from '../../src/batcher/linger.js';
import { ManualClock } from '../support/manual-clock.js';

const settle = () => new Promise((r) => setImmediate(r));

function setup(lingerMs: number) {
  const clock = new ManualClock();
  const calls: string[] = [];
  const slots = { saturated: false };
  const linger = new Linger(
    {
      closeExpired: (ms) => calls.push(`expired ${ms}`),
      closeDrained: (quiet, caughtUp) => calls.push(`drained ${quiet} ${caughtUp('ds')}`),
    },
    { clock, lingerMs, slots, caughtUp: (ds) => ds === 'ds' },
  );
  return { clock, calls, linger, saturate: (v: boolean) => (slots.saturated = v) };
}

describe('Linger', () => {
  it('ticks at a quarter of linger_ms within its bounds; the drain wait is at most one tick', () => {
    expect(setup(1000).linger.tickMs).toBe(MAX_TICK_MS);
    expect(setup(200).linger.tickMs).toBe(50);
    expect(setup(8).linger.tickMs).toBe(MIN_TICK_MS);
    expect(setup(1000).linger.drainQuietMs).toBe(DRAIN_QUIET_MS);
    expect(setup(8).linger.drainQuietMs).toBe(MIN_TICK_MS);
  });

  it('a tick closes expired and drained batches, unless every send slot is taken', () => {
    const s = setup(1000);
    s.linger.tick();
    expect(s.calls).toEqual(['expired 1000', `drained ${DRAIN_QUIET_MS} true`]);
    s.calls.length = 0;
    s.saturate(true);
    s.linger.tick();
    expect(s.calls).toEqual([]);
  });

  it('the reader going idle checks for a drained backlog once, drainQuietMs later; stop cancels it', async () => {
    const s = setup(1000);
    s.linger.readerIdle();
    s.linger.readerIdle();
    expect(s.clock.waiting).toBe(1);
    s.clock.advance(DRAIN_QUIET_MS - 1);
    await settle();
    expect(s.calls).toEqual([]);
    s.clock.advance(1);
    await settle();
    expect(s.calls).toEqual([`drained ${DRAIN_QUIET_MS} true`]);
    s.linger.readerIdle();
    await s.linger.close();
    s.clock.advance(DRAIN_QUIET_MS);
    await settle();
    expect(s.calls).toHaveLength(1);
    s.linger.readerIdle();
    expect(s.clock.waiting, 'no check after stop').toBe(0);
  });
});
