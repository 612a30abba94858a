import { describe, expect, it } from 'vitest';
import { PROBE_BUDGET } from '../../src/sender/sender.js';
import { harness, lines, settle } from './helpers.js';

describe('Sender: SPEC section 4 answers against the emulator, timing on a manual clock', () => {
  it('429: waits Retry-After, pauses the whole budget (every Data Source), resends the same bytes', async () => {
    const h = await harness();
    h.emu.failNext(1, { kind: 'status', status: 429, retry_after: 7 });
    const a = h.batch('first', lines('a', 50));
    const done = h.sender.deliver(await a);
    await settle(() => h.clock.waiting > 0, 'the sender to wait after the 429');
    expect(h.clock.nextWakeInMs()).toBe(7000);
    const other = h.sender.deliver(await h.batch('second', lines('b', 5)));
    h.clock.advance(6999);
    await new Promise((r) => setTimeout(r, 50));
    expect(h.sent).toHaveLength(1); // the other Data Source waits too
    h.clock.advance(1);
    expect(await done).toBe('done');
    expect(await other).toBe('done');
    expect(h.sent).toHaveLength(3);
    expect(h.sent[1]!.body.equals(h.sent[0]!.body)).toBe(true);
    expect(h.emu.stats().requests_by_status).toMatchObject({ '429': 1, '200': 2 });
    expect(h.retries).toEqual(['429']);
  });

  it('429 without Retry-After uses X-RateLimit-Reset; 5xx, 408 and resets back off with jitter and resend the same bytes', async () => {
    const h = await harness({ rps: 1000 });
    for (const fault of [
      { kind: 'status', status: 503 },
      { kind: 'status', status: 500 },
      { kind: 'status', status: 502 },
      { kind: 'status', status: 504 },
      { kind: 'status', status: 408 },
      { kind: 'reset' },
    ] as const) {
      h.emu.failNext(1, fault);
    }
    const done = h.sender.deliver(await h.batch('ds', lines('x', 20)));
    // Backoff ceiling doubles per attempt from 1000 ms; random() = 0.5 -> half of it.
    const expectedWaits = [500, 1000, 2000, 4000, 8000, 16000];
    for (const wait of expectedWaits) {
      await settle(() => h.clock.waiting > 0, 'a backoff');
      expect(h.clock.nextWakeInMs()).toBe(wait);
      h.clock.advance(wait);
    }
    expect(await done).toBe('done');
    expect(h.sent).toHaveLength(7);
    for (const s of h.sent) expect(s.body.equals(h.sent[0]!.body)).toBe(true);
    expect(h.retries).toEqual(['5xx', '5xx', '5xx', '5xx', 'timeout', 'network']);
  });

  it('401/403: parks the budget (token_rejected), keeps the data, probes every 60 s and at once on wake', async () => {
    const h = await harness();
    h.token.value = 'wrong-token';
    const done = h.sender.deliver(await h.batch('ds', lines('t', 10)));
    await settle(() => h.parks.length === 1, 'park');
    expect(h.parks[0]).toEqual({ scope: 'budget', reason: 'token_rejected' });
    await settle(() => h.clock.waiting > 0, 'waiting while parked');
    expect(h.clock.nextWakeInMs()).toBe(60_000);
    h.clock.advance(60_000);
    await settle(() => h.sent.length === 2, 'probe after 60 s');
    await settle(() => h.clock.waiting > 0, 'waiting again');
    expect(h.clock.nextWakeInMs()).toBe(60_000);
    // The token is fixed (token file rewritten / SIGHUP): probe now, not in 60 s.
    h.token.value = h.emu.token;
    h.sender.wake();
    expect(await done).toBe('done');
    expect(h.sent).toHaveLength(3);
    expect(h.parks.at(-1)).toEqual({ scope: 'budget', reason: null });
    expect(h.emu.stats().requests_by_status).toMatchObject({ '403': 2, '200': 1 });
  });

  it('404: parks the budget as workspace_not_found', async () => {
    const h = await harness();
    h.token.value = h.emu.foreignToken;
    const done = h.sender.deliver(await h.batch('ds', lines('w', 3)));
    await settle(() => h.parks.length === 1, 'park');
    expect(h.parks[0]).toEqual({ scope: 'budget', reason: 'workspace_not_found' });
    h.token.value = h.emu.token;
    h.sender.wake();
    expect(await done).toBe('done');
  });

  it('400: bisects, isolating k bad lines in O(k log n) requests; the good lines are stored once', async () => {
    const h = await harness({ dataDir: null });
    h.emu.setFaults([{ kind: 'reject_marker', marker: 'BAD' }]);
    const input = lines('g', 256);
    // Both in the first half: bad lines on both sides of the first split would
    // mean a request-level problem (next test).
    input[17] = '{"k":"BAD-1"}';
    input[100] = '{"k":"BAD-2"}';
    const done = await h.sender.deliver(await h.batch('ds', input));
    expect(done).toBe('done');
    expect(h.deadLetters.map((d) => d.lines[0])).toEqual(['{"k":"BAD-1"}', '{"k":"BAD-2"}']);
    expect(h.deadLetters.every((d) => d.reason === 'rejected' && d.status === 400)).toBe(true);
    expect(h.emu.stats().rows).toEqual({ ds: 254 });
    // k = 2, n = 256: at most 1 + 2 * k * log2(n) requests.
    expect(h.sent.length).toBeLessThanOrEqual(1 + 2 * 2 * 8);
    expect(h.parks).toEqual([]);
  });

  it('400 on both halves of the first split: request-level, parks the Data Source (bad_request), keeps the data', async () => {
    const h = await harness({ dataDir: null });
    h.emu.setFaults([{ kind: 'reject_marker', marker: '"k"' }]); // every line
    const done = h.sender.deliver(await h.batch('ds', lines('r', 64)));
    await settle(() => h.parks.length === 1, 'park');
    expect(h.parks[0]).toEqual({ scope: 'ds', reason: 'bad_request' });
    expect(h.sent).toHaveLength(3); // the batch and its two halves
    expect(h.deadLetters).toEqual([]);
    // Another batch of the same Data Source waits; another Data Source still flows.
    const sameDs = h.sender.deliver(await h.batch('ds', lines('s', 2)));
    expect(await h.sender.deliver(await h.batch('other', ['{"ok":1}']))).toBe('done');
    h.emu.setFaults([]);
    h.sender.wake();
    expect(await done).toBe('done');
    expect(await sameDs).toBe('done');
    expect(h.parks.at(-1)).toEqual({ scope: 'ds', reason: null });
    expect(h.emu.stats().rows).toEqual({ ds: 66, other: 1 });
  });

  it(`400 bisection stops after the probe budget (${PROBE_BUDGET} requests) and parks`, async () => {
    const h = await harness({ dataDir: null });
    h.emu.setFaults([{ kind: 'reject_marker', marker: 'BAD' }]);
    // 64 bad lines spread over the first half; the second half is clean.
    const input = lines('p', 512).map((l, i) => (i < 256 && i % 4 === 3 ? '{"k":"BAD"}' : l));
    const done = h.sender.deliver(await h.batch('ds', input));
    await settle(() => h.parks.length === 1, 'park after the probe budget');
    expect(h.parks[0]).toEqual({ scope: 'ds', reason: 'bad_request' });
    expect(h.sent.length).toBeLessThanOrEqual(PROBE_BUDGET + 2);
    h.sender.stop();
    expect(await done).toBe('aborted');
  });

  it('413: splits in halves, lowers the learned size, and dead-letters a single line still too large', async () => {
    const h = await harness({ dataDir: null, maxBody: 2000 }, { maxBytes: 10_000 });
    const big = JSON.stringify({ k: 'x'.repeat(2500) });
    const input = [...lines('m', 100), big];
    expect(await h.sender.deliver(await h.batch('ds', input))).toBe('done');
    expect(h.deadLetters).toEqual([{ ds: 'ds', reason: 'line_too_long', status: 413, lines: [big] }]);
    expect(h.emu.stats().rows).toEqual({ ds: 100 });
    expect(h.sender.capFor('ds')).toBeLessThan(10_000);
    expect(h.retries.filter((r) => r === '413').length).toBeGreaterThan(0);
  });

  it('422: no retry; every line of the batch goes to dead letters as materialized_view_error', async () => {
    const h = await harness({ dataDir: null });
    h.emu.failNext(1, { kind: 'partial', status: 422 });
    const input = lines('v', 10);
    expect(await h.sender.deliver(await h.batch('ds', input))).toBe('done');
    expect(h.sent).toHaveLength(1);
    expect(h.deadLetters).toEqual([{ ds: 'ds', reason: 'materialized_view_error', status: 422, lines: input }]);
  });
});
