import { describe, expect, it } from 'vitest';
import { createCodec } from '../../src/codec/index.js';
import { ConcurrencyLimit } from '../../src/sender/concurrency.js';
import { createLocalLimiter } from '../../src/sender/limiter.js';
import { AUTO_INITIAL_IN_FLIGHT, SLOTS_RESERVED_AHEAD, Sender } from '../../src/sender/sender.js';
import { ManualClock } from '../support/manual-clock.js';

/** One round trip: `n` requests in flight, answered one after another over `rttMs`, each after `rttMs`. */
function round(c: ConcurrencyLimit, clock: ManualClock, rttMs: number, kind: 'ok' | 'congested' = 'ok', n = c.limit): void {
  for (let i = 1; i <= n; i++) c.onStart(i);
  for (let i = 0; i < n; i++) {
    clock.advance(rttMs / n);
    c.onAnswer(rttMs, kind);
  }
}

describe('ConcurrencyLimit (max_in_flight: auto)', () => {
  it('slow start doubles per round trip while the limit is reached, up to the cap', () => {
    const clock = new ManualClock();
    const seen: number[] = [];
    const c = new ConcurrencyLimit(clock, { auto: true, initial: 2, cap: 20, onChange: (n) => seen.push(n) });
    for (let i = 0; i < 6; i++) round(c, clock, 1000);
    expect(seen).toEqual([4, 8, 16, 20]);
    expect(c.limit).toBe(20);
  });

  it('does not grow when the limit was not reached (nothing more to send)', () => {
    const clock = new ManualClock();
    const c = new ConcurrencyLimit(clock, { auto: true, initial: 4, cap: 64 });
    for (let i = 0; i < 5; i++) round(c, clock, 200, 'ok', 2);
    expect(c.limit).toBe(4);
  });

  it('halves on a 429/503/timeout (once per round trip), then grows by one per round trip', () => {
    const clock = new ManualClock();
    const c = new ConcurrencyLimit(clock, { auto: true, initial: 2, cap: 64 });
    for (let i = 0; i < 4; i++) round(c, clock, 500);
    expect(c.limit).toBe(32);
    round(c, clock, 500, 'congested');
    expect(c.limit).toBe(16); // many congested answers in one round: one halving
    round(c, clock, 500);
    expect(c.limit).toBe(17);
    round(c, clock, 500);
    expect(c.limit).toBe(18);
  });

  it('halves when the answer time rises well above its baseline', () => {
    const clock = new ManualClock();
    const c = new ConcurrencyLimit(clock, { auto: true, initial: 8, cap: 64 });
    round(c, clock, 1000);
    round(c, clock, 1000);
    expect(c.limit).toBe(32);
    round(c, clock, 2500);
    expect(c.limit).toBeLessThanOrEqual(16);
    // The baseline follows the slower network: growth resumes within a few round trips.
    for (let i = 0; i < 6; i++) round(c, clock, 2500);
    const settled = c.limit;
    round(c, clock, 2500);
    expect(c.limit).toBe(settled + 1);
  });

  it('never goes below 1; a fixed number never moves', () => {
    const clock = new ManualClock();
    const c = new ConcurrencyLimit(clock, { auto: true, initial: 2, cap: 64 });
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      c.onAnswer(100, 'congested');
    }
    expect(c.limit).toBe(1);
    const fixed = new ConcurrencyLimit(clock, { auto: false, initial: 8, cap: 64 });
    for (let i = 0; i < 3; i++) round(fixed, clock, 100);
    round(fixed, clock, 100, 'congested');
    expect(fixed.limit).toBe(8);
  });
});

describe('spoolship_in_flight_limit from the start', () => {
  it('the sender reports its limit when it is built: auto starts at one second of the rate budget, at least AUTO_INITIAL_IN_FLIGHT (within the cap), a fixed number as given', () => {
    const seen = (maxInFlight: number | 'auto', cap?: number, requestsPerSecond?: number): number[] => {
      const out: number[] = [];
      const noop = () => undefined;
      new Sender({
        client: { post: async () => ({ kind: 'error', code: 'ECONNREFUSED', message: 'no', timeout: false }) as never },
        codec: createCodec('none', 0),
        limiter: createLocalLimiter(100),
        clock: new ManualClock(),
        random: () => 0.5,
        backoff: { initialMs: 10, maxMs: 100, multiplier: 2 },
        http2: false,
        maxInFlight,
        maxInFlightCap: cap,
        requestsPerSecond,
        maxBytes: 1000,
        hooks: { onRequest: noop, onRetry: noop, onAck: noop, onParkChange: noop, deadLetterLines: async () => undefined, onInFlightLimit: (n) => out.push(n) },
      });
      return out;
    };
    expect(seen('auto')).toEqual([AUTO_INITIAL_IN_FLIGHT]);
    expect(seen('auto', 4)).toEqual([4]);
    expect(seen(8)).toEqual([8]);
    // The platform's 100 requests/s: 100 from the start, so that 2 s answers
    // do not cost three round trips of doubling before a backlog flows.
    expect(seen('auto', 200, 100)).toEqual([100]);
    expect(seen('auto', 64, 100)).toEqual([64]);
    expect(seen('auto', 200, 10)).toEqual([AUTO_INITIAL_IN_FLIGHT]);
    expect(seen(8, 200, 100)).toEqual([8]);
  });
});

describe('slots reserved ahead of the rate budget', () => {
  it('one agent holds at most SLOTS_RESERVED_AHEAD reserved slots at once, however many requests it has in flight', async () => {
    let pending = 0;
    let most = 0;
    const waiting: Array<() => void> = [];
    // A budget that hands out slots only when the test says (a shared budget with a queue ahead).
    const limiter = {
      acquire: () =>
        new Promise<void>((resolve) => {
          pending++;
          most = Math.max(most, pending);
          waiting.push(() => {
            pending--;
            resolve();
          });
        }),
      pause: () => undefined,
      close: async () => undefined,
      destroy: async () => undefined,
    };
    const noop = () => undefined;
    const codec = createCodec('none', 0);
    const sender = new Sender({
      client: { post: async () => ({ kind: 'response', status: 200, retryAfter: null, rateLimitReset: null, location: null, contentType: 'application/json', body: '{"successful_rows":1,"quarantined_rows":0}', bodyTruncated: false }) },
      codec,
      limiter,
      clock: new ManualClock(),
      random: () => 0.5,
      backoff: { initialMs: 10, maxMs: 100, multiplier: 2 },
      http2: false,
      maxInFlight: 32,
      maxBytes: 1000,
      hooks: { onRequest: noop, onRetry: noop, onAck: noop, onParkChange: noop, deadLetterLines: async () => undefined },
    });
    const body = Buffer.from('{"a":1}\n');
    const deliveries = Array.from({ length: 32 }, (_, i) => sender.deliver({ id: i + 1, ds: 'ds', body, encoding: null, rawLen: body.length, lines: 1 }));
    // Let every delivery reach the budget, then hand out slots one by one.
    for (let served = 0; served < 32; served++) {
      for (let spin = 0; spin < 50 && waiting.length === 0; spin++) await new Promise((r) => setImmediate(r));
      waiting.shift()!();
    }
    expect(await Promise.all(deliveries)).toEqual(Array(32).fill('done'));
    expect(most).toBe(SLOTS_RESERVED_AHEAD);
  });
});
