import { describe, expect, it } from 'vitest';
import { PROBE_BUDGET } from '../../src/sender/sender.js';
import { harness, lines, settle } from './helpers.js';

describe('Sender: README "How each server answer is handled" answers against the emulator, timing on a manual clock', () => {
  it('429: waits Retry-After, pauses the whole budget (every Data Source), resends the same bytes', async () => {
    const h = await harness();
    h.emu.failNext(1, { kind: 'status', status: 429, retry_after: 7 });
    const a = h.batch('first', lines('a', 50));
    const done = h.sender.deliver(await a);
    await settle(() => h.clock.waiting > 0, 'the sender to wait after the 429');
    expect(h.clock.nextWakeInMs()).toBe(7000);
    const other = h.sender.deliver(await h.batch('second', lines('b', 5)));
    // The other Data Source waits too: on the clock, for the pause's end, and nothing wakes before it.
    await settle(() => h.clock.waiting > 1, 'the other Data Source to wait for the pause');
    h.clock.advance(6999);
    expect(h.clock.nextWakeInMs()).toBe(1);
    expect(h.sent).toHaveLength(1);
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

  it('a wake() while the budget\'s probe is on the wire: its failure does not undo it, the next probe goes at once', async () => {
    const h = await harness();
    h.token.value = 'revoked';
    const done = h.sender.deliver(await h.batch('ds', lines('t', 2)));
    await settle(() => h.parks.length === 1, 'park');
    await settle(() => h.clock.waiting > 0, 'waiting while parked');
    // SIGHUP as the probe leaves, with the old token still in the file: the probe's 403 is an answer to the old state.
    h.beforePost = (n) => n === 1 && h.sender.wake();
    h.clock.advance(60_000);
    await settle(() => h.sent.length === 3, 'a probe at once after the failed one');
    await settle(() => h.clock.waiting > 0, 'waiting again');
    expect(h.clock.nextWakeInMs(), 'that probe failed too, after the wake: a whole interval').toBe(60_000);
    h.token.value = h.emu.token;
    h.sender.wake();
    expect(await done).toBe('done');
  });

  it('a wake() while a request sent before the park is still on the wire: its late 403 does not undo it', async () => {
    const h = await harness({ datasources: ['known'], appendTokens: ['append-only'] });
    h.token.value = 'append-only';
    expect(await h.sender.deliver(await h.batch('known', lines('k', 2)))).toBe('done');
    // Two batches of a Data Source the token may not create, both on the wire; the second one's 403 comes late.
    // Each moves to the disk queue once refused (as in the agent): nothing waits in the park for its probe.
    let bothSent!: () => void;
    let late!: () => void;
    const held = [new Promise<void>((r) => (bothSent = r)), new Promise<void>((r) => (late = r))];
    h.answerHeld = async (n) => held[n - 1];
    const [a, b] = [await h.batch('new', lines('a', 2)), await h.batch('new', lines('b', 2))];
    const toQueue = { canDefer: () => true };
    const first = h.sender.deliver(a, toQueue);
    const second = h.sender.deliver(b, toQueue);
    await settle(() => h.sent.length === 3, 'both on the wire');
    bothSent();
    expect(await first).toBe('deferred');
    // A token that may create it (SIGHUP) before the late 403: the probe may go at once all the same.
    h.token.value = h.emu.token;
    h.sender.wake();
    late();
    expect(await second).toBe('deferred');
    expect(h.emu.stats().requests_by_status).toEqual({ '200': 1, '403': 2 });
    expect(h.sender.dsWaitMs('new')).toBe(0);
    // The queue's replayer probes with a queued batch now, not in 60 s.
    expect(await h.sender.deliver(a, { leaveWhenDsParked: true })).toBe('done');
    expect(await h.sender.deliver(b, { leaveWhenDsParked: true })).toBe('done');
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

  it('400 with bad lines in both halves (and in 3 quarters): every bad line is isolated, every good line stored, no park', async () => {
    const h = await harness({ dataDir: null });
    h.emu.setFaults([{ kind: 'reject_marker', marker: 'BAD' }]);
    const input = lines('g', 256);
    input[17] = '{"k":"BAD-1"}';
    input[100] = '{"k":"BAD-2"}';
    input[200] = '{"k":"BAD-3"}';
    expect(await h.sender.deliver(await h.batch('ds', input))).toBe('done');
    expect(h.deadLetters.map((d) => d.lines[0]).sort()).toEqual(['{"k":"BAD-1"}', '{"k":"BAD-2"}', '{"k":"BAD-3"}']);
    expect(h.emu.stats().rows).toEqual({ ds: 253 });
    expect(h.parks).toEqual([]);
  });

  it('400 for every line: request-level after single lines of 3 quarters fail, parks the Data Source (bad_request), keeps the data', async () => {
    const h = await harness({ dataDir: null });
    h.emu.setFaults([{ kind: 'reject_marker', marker: '"k"' }]); // every line
    const done = h.sender.deliver(await h.batch('ds', lines('r', 64)));
    await settle(() => h.parks.length === 1, 'park');
    expect(h.parks[0]).toEqual({ scope: 'ds', reason: 'bad_request' });
    // Pieces reaching an untried quarter go first: ~3 log2(n) requests, not a full bisection.
    expect(h.sent.length).toBeLessThanOrEqual(1 + 3 * 6);
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
    expect(h.deadLetters).toEqual([]);
  });

  it('400 for single lines of a trickle (batches of one line) is no request-level problem (SPEC: 3 quarters of one batch): each bad line is dead-lettered, the good ones after it ship, no park', async () => {
    const h = await harness({ dataDir: null });
    h.emu.setFaults([{ kind: 'reject_marker', marker: 'BAD' }]);
    for (let i = 0; i < 3; i++) expect(await h.sender.deliver(await h.batch('ds', [`{"k":"BAD${i}"}`]))).toBe('done');
    for (let i = 0; i < 3; i++) expect(await h.sender.deliver(await h.batch('ds', [`{"k":"good${i}"}`]))).toBe('done');
    expect(h.deadLetters.map((d) => d.lines[0])).toEqual(['{"k":"BAD0"}', '{"k":"BAD1"}', '{"k":"BAD2"}']);
    expect(h.parks).toEqual([]);
    expect(h.emu.stats().rows).toEqual({ ds: 3 });
  });

  it('a parked Data Source is probed every 60 s by a batch that waits for it, also one taken back from the disk queue', async () => {
    const h = await harness({ dataDir: null });
    h.emu.setFaults([{ kind: 'reject_marker', marker: '"k"' }]);
    const batch = await h.batch('ds', lines('q', 16));
    // The pipeline's way: deferred to the disk queue once the park is found.
    expect(await h.sender.deliver(batch, { canDefer: () => true, deferAfter: 3 })).toBe('deferred');
    expect(h.parks).toEqual([{ scope: 'ds', reason: 'bad_request' }]);
    const before = h.sent.length;
    // The queue replayer's way: no deferring; it waits for the park.
    const replay = h.sender.deliver(batch);
    await settle(() => h.clock.waiting > 0, 'the replayed batch to wait for the park');
    expect(h.sent.length).toBe(before);
    h.clock.advance(60_000);
    await settle(() => h.sent.length > before, 'a probe after 60 s');
    // Still parked: said again, a minute after the first (the log once a minute).
    await settle(() => h.parks.length === 2 && h.clock.waiting > 0, 'the probe to fail and the batch to wait again');
    expect(h.parks).toEqual([{ scope: 'ds', reason: 'bad_request' }, { scope: 'ds', reason: 'bad_request' }]);
    h.emu.setFaults([]);
    h.sender.wake(); // SIGHUP: probe now
    expect(await replay).toBe('done');
    expect(h.parks.at(-1)).toEqual({ scope: 'ds', reason: null });
    expect(h.emu.stats().rows).toEqual({ ds: 16 });
    expect(h.deadLetters).toEqual([]);
  });

  it('400 bisection with nothing accepted parks once the probe budget is spent', async () => {
    const h = await harness({ dataDir: null }, { probeBudget: 4 });
    h.emu.setFaults([{ kind: 'reject_marker', marker: '"k"' }]);
    const done = h.sender.deliver(await h.batch('ds', lines('p', 512)));
    await settle(() => h.parks.length === 1, 'park after the probe budget');
    expect(h.parks[0]).toEqual({ scope: 'ds', reason: 'bad_request' });
    expect(h.sent.length).toBeLessThanOrEqual(1 + 4 + 1);
    expect(h.deadLetters).toEqual([]);
    void h.sender.close();
    expect(await done).toBe('aborted');
  });

  it('once part of the batch was accepted, bisection goes on past the probe budget until every bad line is isolated', async () => {
    // The first acceptance comes with the 5th bisection request (lines 0-3).
    const h = await harness({ dataDir: null, rps: 100_000 }, { probeBudget: 6 });
    h.emu.setFaults([{ kind: 'reject_marker', marker: 'BAD' }]);
    const input = lines('p', 128).map((l, i) => (i % 8 === 5 ? `{"k":"BAD${i}"}` : l));
    expect(await h.sender.deliver(await h.batch('ds', input))).toBe('done');
    expect(h.deadLetters).toHaveLength(16);
    expect(h.sent.length).toBeGreaterThan(1 + 6 * 4);
    expect(h.emu.stats().rows).toEqual({ ds: 112 });
    expect(h.parks).toEqual([]);
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
    // One request at a time from the 413 until a success, and the gauge says so.
    expect(h.limits).toEqual([4, 1, 4]);
  });

  it('413 teaches the whole budget: batches formed before it are cut before they are sent, so a backlog costs O(log) 413s; the limit grows back 10 % per 5 minutes', async () => {
    const h = await harness({ dataDir: null, maxBody: 1500, rps: 100_000 }, { maxBytes: 10_000 });
    const padded = (p: string) => Array.from({ length: 90 }, (_, i) => JSON.stringify({ k: `${p}${i}`, pad: 'y'.repeat(30) }));
    const batches = await Promise.all(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map((p, i) => h.batch(i % 2 ? 'one' : 'two', padded(p))));
    for (const b of batches) expect(b.rawLen).toBeGreaterThan(3500);
    for (const b of batches) expect(await h.sender.deliver(b, { neverSent: true })).toBe('done');
    const stats = h.emu.stats();
    // 4,000 -> 2,000 -> 1,000 bytes: two 413s in all, not a bisection per batch.
    expect(stats.requests_by_status['413']).toBeLessThanOrEqual(2);
    expect(stats.rows).toEqual({ one: 360, two: 360 });
    expect(h.deadLetters).toEqual([]);
    const cap = h.sender.capFor('any');
    expect(cap).toBeLessThanOrEqual(1500);
    h.clock.advance(5 * 60 * 1000);
    expect(h.sender.capFor('any')).toBe(Math.floor(cap * 1.1));
    h.clock.advance(3 * 60 * 60 * 1000);
    expect(h.sender.capFor('any')).toBe(10_000);
  });

  it('413 with many batches in flight at once: pieces waiting for their turn are cut to what the others learned meanwhile, not walked down the same ladder each', async () => {
    const h = await harness({ dataDir: null, maxBody: 1500, rps: 100_000 }, { maxBytes: 100_000 });
    const padded = (p: string) => Array.from({ length: 600 }, (_, i) => JSON.stringify({ k: `${p}${i}`, pad: 'y'.repeat(30) }));
    const batches = await Promise.all(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map((p, i) => h.batch(`ds${i % 4}`, padded(p))));
    const rawLen = Math.max(...batches.map((b) => b.rawLen));
    expect(rawLen).toBeGreaterThan(25_000);
    // All eight go out together (nothing is learned yet); each gets a 413.
    const results = await Promise.all(batches.map((b) => h.sender.deliver(b, { neverSent: true })));
    expect(results.every((r) => r === 'done')).toBe(true);
    expect(h.emu.stats().rows).toEqual({ ds0: 1200, ds1: 1200, ds2: 1200, ds3: 1200 });
    // The eight in flight at the first 413, then one ladder from ~30 KB down to 1,500 bytes for all of them.
    const ladder = Math.ceil(Math.log2(rawLen / 1500));
    expect(h.emu.stats().requests_by_status['413']).toBeLessThanOrEqual(batches.length + ladder + 1);
    expect(h.deadLetters).toEqual([]);
  });

  it('a batch that was sent before (queued or re-formed) is never cut to the learned limit: only a 413 splits it', async () => {
    const h = await harness({ dataDir: null, maxBody: 1500, rps: 100_000 }, { maxBytes: 10_000 });
    const big = Array.from({ length: 90 }, (_, i) => JSON.stringify({ k: `z${i}`, pad: 'y'.repeat(30) }));
    expect(await h.sender.deliver(await h.batch('ds', big), { neverSent: true })).toBe('done');
    const before = h.emu.stats().requests_by_status['413'] ?? 0;
    expect(await h.sender.deliver(await h.batch('ds', big))).toBe('done');
    expect(h.emu.stats().requests_by_status['413']).toBeGreaterThan(before);
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

describe('Sender: a 403 for one Data Source while the token works for others', () => {
  it('parks that Data Source only (datasource_rejected), probes it every 60 s, and unparks once it is accepted', async () => {
    const h = await harness({ datasources: ['known'], appendTokens: ['append-only'] });
    h.token.value = 'append-only';
    expect(await h.sender.deliver(await h.batch('known', lines('k', 3)))).toBe('done');
    const refused = h.sender.deliver(await h.batch('unknown', lines('u', 3)));
    await settle(() => h.parks.length === 1, 'the Data Source park');
    expect(h.parks[0]).toEqual({ scope: 'unknown', reason: 'datasource_rejected' });
    expect(h.sender.budgetPark.parked).toBe(false);
    // The known Data Source still flows.
    expect(await h.sender.deliver(await h.batch('known', lines('k2', 2)))).toBe('done');
    await settle(() => h.clock.waiting > 0, 'the refused batch waiting for its probe');
    const before = h.sent.length;
    h.clock.advance(60_000);
    await settle(() => h.sent.length > before && h.clock.waiting > 0, 'a probe after 60 s, refused again');
    expect(h.parks.at(-1)).toEqual({ scope: 'unknown', reason: 'datasource_rejected' });
    // A token that may create it: the next probe (SIGHUP: now) is accepted.
    h.token.value = h.emu.token;
    h.sender.wake();
    expect(await refused).toBe('done');
    expect(h.parks.at(-1)).toEqual({ scope: 'unknown', reason: null });
    expect(h.emu.stats().rows).toEqual({ known: 5, unknown: 3 });
  });

  it('a 403 before any acceptance: another Data Source probes at once, and its success parks only the refused one', async () => {
    // A DaemonSet starting on a new directory first: nothing proves the token yet.
    const h = await harness({ datasources: ['known'], appendTokens: ['append-only'] });
    h.token.value = 'append-only';
    const refused = h.sender.deliver(await h.batch('unknown', lines('u', 3)));
    await settle(() => h.parks.length === 1, 'the budget park');
    expect(h.parks[0]).toEqual({ scope: 'budget', reason: 'token_rejected' });
    // No 60 s wait (the manual clock does not move): the known Data Source's batch is the probe.
    expect(await h.sender.deliver(await h.batch('known', lines('k', 2)))).toBe('done');
    await settle(() => h.parks.some((p) => p.scope === 'unknown'), 'the refused Data Source parked alone');
    expect(h.parks).toEqual([
      { scope: 'budget', reason: 'token_rejected' },
      { scope: 'budget', reason: null },
      { scope: 'unknown', reason: 'datasource_rejected' },
    ]);
    expect(h.emu.stats().rows).toEqual({ known: 2 });
    void h.sender.close();
    expect(await refused).toBe('aborted');
  });

  it("a 403 before any acceptance while another Data Source's batch is on the wire: the budget park is unconfirmed until that answer", async () => {
    // The ERROR is for data that needs an operator: a Data Source that does not exist, proved by another's success, is one; a token refused everywhere is.
    const h = await harness({ datasources: ['known'], appendTokens: ['append-only'] });
    h.token.value = 'append-only';
    h.emu.failNext(1, { kind: 'slow', delay_ms: 1500 });
    const known = h.sender.deliver(await h.batch('known', lines('k', 2)));
    await settle(() => h.sent.length === 1, 'known on the wire');
    const refused = h.sender.deliver(await h.batch('unknown', lines('u', 3)));
    await settle(() => h.parks.length === 1, 'the budget park');
    expect(h.unconfirmed).toEqual([{ scope: 'budget', reason: 'token_rejected' }]);
    expect(await known).toBe('done');
    await settle(() => h.parks.some((p) => p.scope === 'unknown'), 'the refused Data Source parked alone');
    expect(h.parks).toEqual([
      { scope: 'budget', reason: 'token_rejected' },
      { scope: 'budget', reason: null },
      { scope: 'unknown', reason: 'datasource_rejected' },
    ]);
    expect(h.unconfirmed).toHaveLength(1);
    void h.sender.close();
    expect(await refused).toBe('aborted');
  });

  it('an unconfirmed budget park is confirmed, and heard again at once, when the other Data Source is refused too', async () => {
    const h = await harness();
    h.token.value = 'revoked';
    const batchA = await h.batch('a', lines('a', 2));
    let a: Promise<unknown> | null = null;
    // a's delivery is under way before b's answer: whichever 403 comes first parks unconfirmed, the other confirms.
    h.beforePost = (n) => {
      if (n === 0) a = h.sender.deliver(batchA);
    };
    const b = h.sender.deliver(await h.batch('b', lines('b', 2)));
    await settle(() => h.parks.length === 2, 'the park and its confirmation');
    expect(h.parks).toEqual([
      { scope: 'budget', reason: 'token_rejected' },
      { scope: 'budget', reason: 'token_rejected' },
    ]);
    expect(h.unconfirmed).toEqual([{ scope: 'budget', reason: 'token_rejected' }]);
    // Heard now, not after the 60 s probe interval (the manual clock did not move).
    expect(h.sent.map((x) => x.ds).sort()).toEqual(['a', 'b']);
    void h.sender.close();
    expect(await a).toBe('aborted');
    expect(await b).toBe('aborted');
  });

  it('a 403 before any acceptance, refused for the early probe too: the budget stays parked, one early probe per Data Source newly refused', async () => {
    const h = await harness();
    h.token.value = 'revoked';
    const waiting = [h.sender.deliver(await h.batch('a', lines('a', 2)))];
    await settle(() => h.parks.length === 1, 'the budget park');
    waiting.push(h.sender.deliver(await h.batch('b', lines('b', 2))));
    await settle(() => h.sent.length === 2, 'b probes at once');
    // b's 403 offers one more (two new directories before a known one stopped everything for good).
    waiting.push(h.sender.deliver(await h.batch('c', lines('c', 2))));
    await settle(() => h.sent.length === 3, 'c probes at once');
    // a, b and c refused: a second batch of b waits for the interval, as all do.
    waiting.push(h.sender.deliver(await h.batch('b', lines('b2', 2))));
    await settle(() => h.clock.waiting >= 4, 'all four waiting for the next probe');
    expect(h.sent.map((s) => s.ds)).toEqual(['a', 'b', 'c']);
    expect(h.clock.nextWakeInMs()).toBe(60_000);
    expect(h.parks).toEqual([{ scope: 'budget', reason: 'token_rejected' }]);
    // Each newly refused is heard though the park's reason stays: its batches leave the reader's room (nothing else woke the reader).
    expect(h.refused).toEqual([['a', 'b'], ['a', 'b', 'c']]);
    void h.sender.close();
    for (const w of waiting) expect(await w).toBe('aborted');
  });

  it.each([
    ['401', { kind: 'status', status: 401 }, 'token_rejected'],
    ['3xx', { kind: 'status', status: 301, location: 'http://elsewhere.example/' }, 'unexpected_response'],
  ] as const)('a %s park holds when a request sent before it is acknowledged after it: only a 403 may be a Data Source that does not exist', async (_name, fault, reason) => {
    const h = await harness();
    // a's answer comes late, after b's refusal has parked the budget.
    h.emu.failNext(1, { kind: 'slow', delay_ms: 1500 });
    h.emu.failNext(1, fault);
    const a = h.sender.deliver(await h.batch('a', lines('a', 2)));
    await settle(() => h.sent.length === 1, 'a sent');
    const b = h.sender.deliver(await h.batch('b', lines('b', 2)));
    await settle(() => h.parks.length === 1, 'the budget parked by b\'s answer');
    expect(await a).toBe('done');
    expect(h.parks).toEqual([{ scope: 'budget', reason }]);
    // b waits for the probe in 60 s, not sent again at once.
    await settle(() => h.clock.waiting > 0, 'b waiting for the probe');
    expect(h.clock.nextWakeInMs()).toBe(60_000);
    expect(h.sent.map((x) => x.ds)).toEqual(['a', 'b']);
    void h.sender.close();
    expect(await b).toBe('aborted');
  });

  it('a 403 everywhere (the token was revoked) still parks the budget as token_rejected', async () => {
    const h = await harness();
    expect(await h.sender.deliver(await h.batch('a', lines('a', 2)))).toBe('done');
    h.token.value = 'revoked';
    const b = h.sender.deliver(await h.batch('b', lines('b', 2)));
    await settle(() => h.parks.length === 1, 'b parked');
    expect(h.parks[0]).toEqual({ scope: 'b', reason: 'datasource_rejected' });
    const a = h.sender.deliver(await h.batch('a', lines('a2', 2)));
    await settle(() => h.parks.length === 2, 'the budget parked');
    expect(h.parks[1]).toEqual({ scope: 'budget', reason: 'token_rejected' });
    void h.sender.close();
    expect(await a).toBe('aborted');
    expect(await b).toBe('aborted');
  });
});
