// The waits before each attempt (sender/clearance.ts) on a manual clock: a
// Retry-After pause holds every Data Source and only ever moves later; a
// parked Data Source lets a caller that may leave go at once.
import { describe, expect, it } from 'vitest';
import { Clearance } from '../../src/sender/clearance.js';
import { newCtx } from '../../src/sender/deliveries.js';
import { DataSourceRefusals } from '../../src/sender/ds-refusals.js';
import type { RateLimiter } from '../../src/sender/limiter.js';
import { Notifier } from '../../src/sender/notifier.js';
import { PARK_PROBE_INTERVAL_MS, Park } from '../../src/sender/park.js';
import type { BudgetParkReason } from '../../src/sender/retry-policy.js';
import { ManualClock } from '../support/manual-clock.js';

function clearance() {
  const clock = new ManualClock();
  const notifier = new Notifier();
  const pauses: number[] = [];
  const limiter = { pause: (ms: number) => pauses.push(ms) } as unknown as RateLimiter;
  const budget = new Park<BudgetParkReason>(clock, notifier, () => undefined);
  const refusals = new DataSourceRefusals(clock, notifier, () => undefined);
  const c = new Clearance(clock, notifier, limiter, budget, refusals);
  const ctx = () => newCtx({ id: 1, ds: 'ds', body: Buffer.alloc(0), encoding: null, rawLen: 0, lines: 0 }, {}, clock.now());
  return { clock, c, pauses, budget, refusals, ctx, notifier };
}

/** Let promise chains run until something sleeps on the clock. */
async function sleeping(clock: ManualClock): Promise<void> {
  for (let i = 0; i < 100 && clock.waiting === 0; i++) await new Promise((r) => setImmediate(r));
  expect(clock.waiting).toBe(1);
}

describe('Clearance', () => {
  it('clear at once when nothing is parked or paused', async () => {
    const { c, ctx } = clearance();
    expect(await c.waitUntilClear('ds', ctx(), false)).toBe(false);
  });

  it('a Retry-After pause holds every request until it ends, and only a later one replaces it (the shared budget is told once each)', async () => {
    const { clock, c, pauses, ctx } = clearance();
    c.pause(clock.now() + 30_000, 30_000);
    c.pause(clock.now() + 10_000, 10_000);
    expect(pauses).toEqual([30_000]);
    const wait = c.waitUntilClear('other', ctx(), false);
    await sleeping(clock);
    expect(clock.nextWakeInMs()).toBe(30_000);
    clock.advance(30_000);
    expect(await wait).toBe(false);
  });

  it("a parked Data Source whose probe is not due: 'left' for a caller that may leave, the probe once it is due", async () => {
    const { clock, c, refusals, ctx } = clearance();
    refusals.park('ds').park('bad_request');
    expect(await c.waitUntilClear('ds', ctx(), true)).toBe('left');
    clock.advance(PARK_PROBE_INTERVAL_MS);
    const probe = ctx();
    expect(await c.waitUntilClear('ds', probe, true)).toBe(false);
    expect(probe.holdsDsProbe).toBe(true);
  });

  it("an aborted delivery stops waiting: 'aborted'", async () => {
    const { clock, c, budget, ctx, notifier } = clearance();
    budget.park('token_rejected');
    const x = ctx();
    const wait = c.waitUntilClear('ds', x, false);
    await sleeping(clock);
    // As Sender.deliver's abort does: the signal, then every waiter wakes to look.
    x.ac.abort();
    notifier.notify();
    expect(await wait).toBe('aborted');
  });
});
