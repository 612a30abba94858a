// A park (sender/park.ts) on a manual clock: one probe at a time, every
// PARK_PROBE_INTERVAL_MS, and at once after wake().
import { describe, expect, it } from 'vitest';
import { Notifier } from '../../src/sender/notifier.js';
import { PARK_PROBE_INTERVAL_MS, Park } from '../../src/sender/park.js';
import { ManualClock } from '../support/manual-clock.js';

function park() {
  const clock = new ManualClock();
  const p = new Park<'token_rejected'>(clock, new Notifier(), () => undefined);
  return { clock, p };
}

describe('Park', () => {
  it('tells its change, and while it stays parked (failed probes, other answers alike) once a probe interval at most: the log once a minute', () => {
    const clock = new ManualClock();
    const told: Array<[string | null, string | null]> = [];
    const p = new Park<'token_rejected'>(clock, new Notifier(), (r, prev) => told.push([r, prev]));
    p.park('token_rejected');
    p.park('token_rejected'); // another request's 403 at once
    clock.advance(PARK_PROBE_INTERVAL_MS - 1);
    p.park('token_rejected');
    expect(told).toEqual([['token_rejected', null]]);
    clock.advance(1);
    p.park('token_rejected'); // the probe a minute later fails
    clock.advance(PARK_PROBE_INTERVAL_MS);
    p.park('token_rejected');
    expect(told).toEqual([
      ['token_rejected', null],
      ['token_rejected', 'token_rejected'],
      ['token_rejected', 'token_rejected'],
    ]);
    p.unpark();
    expect(told.at(-1)).toEqual([null, 'token_rejected']);
  });

  it('a failed probe waits a whole interval for the next', async () => {
    const { clock, p } = park();
    p.park('token_rejected');
    clock.advance(PARK_PROBE_INTERVAL_MS);
    expect(await p.pass()).toBe(true);
    p.probeDone(false);
    expect(p.tryProbe()).toBe(false);
    expect(p.probeWaitMs()).toBe(PARK_PROBE_INTERVAL_MS);
  });

  it('a wake() while a probe is on the wire (SIGHUP, a new token file) is not lost when that probe fails', async () => {
    const { clock, p } = park();
    p.park('token_rejected');
    clock.advance(PARK_PROBE_INTERVAL_MS);
    expect(await p.pass()).toBe(true);
    // The probe went with the old token; the new one arrives before its answer.
    p.wake();
    p.probeDone(false);
    expect(p.probeWaitMs()).toBe(0);
    expect(p.tryProbe(), 'the next probe goes at once, with the new token').toBe(true);
  });

  it('the same when the probe holder parks again (a Data Source refused again) before it lets go of the probe', () => {
    const { clock, p } = park();
    p.park('token_rejected');
    clock.advance(PARK_PROBE_INTERVAL_MS);
    expect(p.tryProbe()).toBe(true);
    p.wake();
    p.park('token_rejected');
    p.releaseProbe();
    expect(p.tryProbe()).toBe(true);
  });
});
