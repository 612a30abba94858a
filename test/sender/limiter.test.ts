// The local request budget's decisions on a manual clock: starts evenly
// spaced (1000 / rps, plus the margin), first come first served, so no
// sliding second holds more than rps starts however many ask at once.
import { describe, expect, it } from 'vitest';
import { createLocalLimiter, LimiterClosedError, SPACING_MARGIN } from '../../src/sender/limiter.js';
import { ManualClock } from '../support/manual-clock.js';
import { BudgetMemory } from '../../src/sender/budget-memory.js';
import { busiestWindow } from '../fleet/helpers.js';

const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

describe('local rate limiter', () => {
  it('spaces starts by 1000 / rps x SPACING_MARGIN on the clock, from when the previous one went, in the order asked', async () => {
    const clock = new ManualClock(0);
    const limiter = createLocalLimiter(100, clock);
    const spacing = 10 * SPACING_MARGIN;
    const started: Array<[number, number]> = [];
    for (let i = 0; i < 4; i++) void limiter.acquire().then(() => started.push([i, clock.now()]));
    await settle();
    expect(started).toEqual([[0, 0]]);
    clock.advance(spacing - 0.01);
    await settle();
    expect(started, 'not before its slot').toHaveLength(1);
    clock.advance(0.01);
    await settle();
    expect(started).toEqual([
      [0, 0],
      [1, spacing],
    ]);
    // Measured from when the previous one went: a clock that jumps two
    // spacings at once lets one more go, not two (no catching up in a burst).
    clock.advance(2 * spacing);
    await settle();
    expect(started.map(([i]) => i)).toEqual([0, 1, 2]);
    clock.advance(spacing);
    await settle();
    expect(started.map(([i]) => i)).toEqual([0, 1, 2, 3]);
  });

  it('a reload\'s new limiter on the same memory goes on from the old one\'s last start: no second request in the same slot', async () => {
    const clock = new ManualClock(0);
    const memory = new BudgetMemory('http://api');
    const old = createLocalLimiter(100, clock, memory);
    await old.acquire();
    await old.close();
    const next = createLocalLimiter(100, clock, memory);
    let went = false;
    void next.acquire().then(() => (went = true));
    await settle();
    expect(went, 'not before the old limiter\'s spacing has passed').toBe(false);
    clock.advance(10 * SPACING_MARGIN);
    await settle();
    expect(went).toBe(true);
    await next.close();
  });

  it('offered 3x the rate for 5 s of clock time, no sliding second holds more than rps starts', async () => {
    const clock = new ManualClock(0);
    const rps = 100;
    const limiter = createLocalLimiter(rps, clock);
    const starts: number[] = [];
    // In steps of 0.5 ms (a spacing of 10.5 ms is 21 steps).
    for (let step = 0; step < 10_000; step++) {
      // 3 requests every 10 ms: 300/s asked.
      if (step % 20 === 0) for (let k = 0; k < 3; k++) void limiter.acquire().then(() => starts.push(clock.now()));
      clock.advance(0.5);
      await settle();
    }
    expect(busiestWindow(starts, 1000)).toBeLessThanOrEqual(rps);
    // Paced, not starved: the budget is used (one start per spacing).
    expect(starts.length).toBeGreaterThanOrEqual(Math.floor(5000 / (10 * SPACING_MARGIN)));
  });

  it('close ends the waits: waiting and later acquires fail with LimiterClosedError', async () => {
    const clock = new ManualClock(0);
    const limiter = createLocalLimiter(10, clock);
    await limiter.acquire();
    const waiting = limiter.acquire();
    await limiter.close();
    await expect(waiting).rejects.toBeInstanceOf(LimiterClosedError);
    await expect(limiter.acquire()).rejects.toBeInstanceOf(LimiterClosedError);
    expect(clock.waiting).toBe(0);
  });
});
