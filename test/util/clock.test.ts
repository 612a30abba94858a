// `after`: the agent's one-shot timers (drain check, journal retry) on the
// injected clock, so tests can move time instead of waiting for it.
import { describe, expect, it } from 'vitest';
import { after } from '../../src/util/clock.js';
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
