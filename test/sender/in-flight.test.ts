// The in-flight bound (sender/in-flight.ts): one request at a time from a 413
// until a success, and a turn that ends without sending gives its place back.
import { afterEach, describe, expect, it } from 'vitest';
import type { SendOutcome } from '../../src/sender/http-client.js';
import { InFlightBound } from '../../src/sender/in-flight.js';
import { createLocalLimiter } from '../../src/sender/limiter.js';
import { ManualClock } from '../support/manual-clock.js';

const limiters: Array<{ close(): Promise<void> | void }> = [];
afterEach(async () => {
  while (limiters.length) await limiters.pop()!.close();
});

function bound(maxInFlight: number) {
  const limiter = createLocalLimiter(1000);
  limiters.push(limiter);
  const limits: number[] = [];
  const bytes: number[] = [];
  const b = new InFlightBound({ clock: new ManualClock(), limiter, maxInFlight, hooks: { onInFlightLimit: (n) => limits.push(n), onInFlightBytes: (n) => bytes.push(n) } });
  return { b, limits, bytes };
}

const ok: SendOutcome = { kind: 'response', status: 200 } as SendOutcome;

describe('InFlightBound', () => {
  it('reports its limit when built; a 413 narrows it to 1, a success widens it back', () => {
    const { b, limits } = bound(4);
    expect(limits).toEqual([4]);
    b.narrow(true);
    b.narrow(true);
    expect(b.concurrencyLimit).toBe(1);
    b.narrow(false);
    expect(b.concurrencyLimit).toBe(4);
    expect(limits).toEqual([4, 1, 4]);
  });

  it("'over_learned' before any byte is held, null when it may no longer go; neither sends, both give their place back", async () => {
    const { b, bytes } = bound(1);
    let sent = 0;
    const send = async () => {
      sent++;
      return ok;
    };
    expect(await b.run(100, () => true, () => true, send)).toBe('over_learned');
    expect(bytes).toEqual([]);
    expect(await b.run(100, () => false, () => false, send)).toBeNull();
    expect(sent).toBe(0);
    expect(b.requestsInFlight).toBe(0);
    expect(await b.run(100, () => false, () => true, send)).toBe(ok);
    expect(sent).toBe(1);
    expect(bytes.at(-1)).toBe(0);
  });
});
