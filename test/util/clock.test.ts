// `after` and `every`: the agent's timers (the tick, the drain check, the
// journal retry) on the injected clock, so tests can move time instead of
// waiting for it.
import { describe, expect, it } from 'vitest';
import { after, every } from '../../src/util/clock.js';
import { ManualClock } from '../support/manual-clock.js';

const settle = () => new Promise((r) => setImmediate(r));

describe('after', () => {
  it('runs once when the clock passes the delay, never before; cancelling stops it', async () => {
    const clock = new ManualClock();
    const ran: string[] = [];
    after(clock, 1000, () => ran.push('retry'));
    const cancel = after(clock, 1000, () => ran.push('cancelled'));
    cancel();
    clock.advance(999);
    await settle();
    expect(ran).toEqual([]);
    expect(clock.nextWakeInMs()).toBe(1);
    clock.advance(1);
    await settle();
    expect(ran).toEqual(['retry']);
    clock.advance(10_000);
    await settle();
    expect(ran).toEqual(['retry']);
  });
});

describe('every', () => {
  it('runs once per period as the clock passes each one; stopping ends it', async () => {
    const clock = new ManualClock();
    let runs = 0;
    const stop = every(clock, 100, () => runs++);
    clock.advance(99);
    await settle();
    expect(runs).toBe(0);
    for (let i = 1; i <= 3; i++) {
      clock.advance(i === 1 ? 1 : 100);
      await settle();
      expect(runs).toBe(i);
    }
    stop();
    expect(clock.waiting).toBe(0);
    clock.advance(1000);
    await settle();
    expect(runs).toBe(3);
  });
});
