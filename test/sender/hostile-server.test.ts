// Answers no real Events API gives: the client must bound what it reads.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createCodec } from '../../src/codec/index.js';
import { EventsClient, MAX_ANSWER_BYTES } from '../../src/sender/http-client.js';
import { createLocalLimiter } from '../../src/sender/limiter.js';
import { classify, parseRateLimitReset, parseRetryAfter } from '../../src/sender/retry-policy.js';
import { Sender } from '../../src/sender/sender.js';
import { ManualClock } from '../support/manual-clock.js';
import { settle } from './helpers.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

async function serve(handler: http.RequestListener): Promise<string> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise((r) => server.close(r)));
  cleanups.push(async () => server.closeAllConnections());
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function client(baseUrl: string): EventsClient {
  const c = new EventsClient({ baseUrl, token: { get: () => 't' }, wait: true, http2: false, caFile: null, timeoutMs: 30_000, maxConnections: 2 });
  cleanups.push(() => c.destroy());
  return c;
}

describe('EventsClient against a hostile server', () => {
  it('reads at most 64 KiB of an endless 200 body, then closes that connection', async () => {
    let socketClosed!: () => void;
    const closed = new Promise<void>((r) => (socketClosed = r));
    let written = 0;
    const url = await serve((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.socket!.on('close', socketClosed);
        const chunk = Buffer.alloc(16 * 1024, 0x61);
        // Endless: write whenever the socket drains, until the client hangs up.
        const pump = () => {
          while (!res.destroyed && res.write(chunk)) written += chunk.length;
        };
        res.on('drain', pump);
        pump();
      });
    });
    const outcome = await client(url).post('ds', Buffer.from('{"a":1}\n'), null);
    expect(outcome.kind).toBe('response');
    if (outcome.kind !== 'response') return;
    expect(outcome.status).toBe(200);
    expect(outcome.bodyTruncated).toBe(true);
    expect(Buffer.byteLength(outcome.body)).toBe(MAX_ANSWER_BYTES);
    // The server sees its socket closed: the rest of the body is never read.
    await closed;
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it('keeps the cause of a network failure (ECONNREFUSED)', async () => {
    const url = await serve((_req, res) => res.end());
    const port = new URL(url).port;
    // Close the server, so nothing listens on that port any more.
    await cleanups.shift()!();
    await cleanups.shift()!();
    const outcome = await client(`http://127.0.0.1:${port}`).post('ds', Buffer.from('{"a":1}\n'), null);
    expect(outcome).toMatchObject({ kind: 'error', code: 'ECONNREFUSED', timeout: false });
  });

  it('a server that never answers: a timeout named as api.timeout_ms, not as an exception\'s number', async () => {
    const url = await serve((req) => req.resume());
    const c = new EventsClient({ baseUrl: url, token: { get: () => 't' }, wait: true, http2: false, caFile: null, timeoutMs: 200, maxConnections: 2 });
    cleanups.push(() => c.destroy());
    const outcome = await c.post('ds', Buffer.from('{"a":1}\n'), null);
    expect(outcome).toEqual({ kind: 'error', code: 'TIMEOUT', timeout: true, message: 'no answer within api.timeout_ms (200 ms)' });
  });
});

// The Sender in front of a scripted server: each request takes the next answer.
interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Answered once this resolves. */
  hold?: Promise<void>;
}

async function scripted(answers: Answer[], fallback: Answer = { status: 200, body: '{"successful_rows":1,"quarantined_rows":0}' }) {
  const seen: string[] = [];
  const url = await serve((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push(`${req.method} ${req.url}`);
      const a = answers.shift() ?? fallback;
      void (a.hold ?? Promise.resolve()).then(() => {
        res.writeHead(a.status, a.headers ?? {});
        res.end(a.body ?? '');
      });
    });
  });
  const clock = new ManualClock();
  const parks: Array<{ scope: string; reason: string | null; detail: string | null }> = [];
  const acks: Array<{ lines: number; quarantined: number }> = [];
  const odd: string[] = [];
  /** Every acknowledgement, told whether its row counts added up ('odd': see `odd`). */
  const counted: string[] = [];
  const codec = createCodec('none', 0);
  const limiter = createLocalLimiter(1000);
  cleanups.push(() => limiter.close());
  const sender = new Sender({
    client: client(url),
    codec,
    limiter,
    clock,
    random: () => 0.5,
    backoff: { initialMs: 1000, maxMs: 60_000, multiplier: 2 },
    http2: false,
    wait: true,
    maxInFlight: 2,
    maxBytes: 10_000_000,
    hooks: {
      onRequest: () => undefined,
      onRetry: () => undefined,
      onAck: (_ds, lines, _raw, quarantined) => acks.push({ lines, quarantined }),
      onParkChange: (scope, reason, _prev, detail) => parks.push({ scope: scope === 'budget' ? 'budget' : scope.ds, reason, detail }),
      deadLetterLines: async () => undefined,
      onOddAnswer: (what) => {
        odd.push(what);
        if (what === 'counts_mismatch') counted.push('odd');
      },
      onCountsAddUp: () => counted.push('add up'),
    },
  });
  cleanups.push(() => sender.close());
  let id = 1;
  const batch = (n: number) => {
    const raw = Buffer.from(Array.from({ length: n }, (_, i) => `{"i":${i}}\n`).join(''));
    return { id: id++, ds: 'ds', body: raw, encoding: null, rawLen: raw.length, lines: n };
  };
  return { url, seen, clock, parks, acks, odd, counted, sender, batch, answers };
}

describe('Sender against answers the Events API never gives', () => {
  it('3xx: never followed, parks the budget (unexpected_response) naming the Location, keeps the data', async () => {
    const target = await scripted([]);
    const s = await scripted([{ status: 301, headers: { location: `${target.url}/v0/events` } }]);
    const done = s.sender.deliver(s.batch(3));
    await settle(() => s.parks.length === 1, 'park');
    expect(s.parks[0]).toMatchObject({ scope: 'budget', reason: 'unexpected_response' });
    expect(s.parks[0]!.detail).toContain(`${target.url}/v0/events`);
    expect(target.seen).toEqual([]);
    expect(s.acks).toEqual([]);
    s.sender.wake(); // the probe now gets the fallback 200
    expect(await done).toBe('done');
    expect(s.acks).toEqual([{ lines: 3, quarantined: 0 }]);
    expect(target.seen).toEqual([]);
  });

  it('another 4xx (405) and a 2xx HTML page park unexpected_response and acknowledge nothing', async () => {
    for (const answer of [
      { status: 405, body: 'Method Not Allowed' },
      { status: 200, headers: { 'content-type': 'text/html' }, body: '<!doctype html><html><body>Welcome to nginx!</body></html>' },
    ]) {
      const s = await scripted([answer]);
      const done = s.sender.deliver(s.batch(2));
      await settle(() => s.parks.length === 1, 'park');
      expect(s.parks[0]).toMatchObject({ scope: 'budget', reason: 'unexpected_response' });
      expect(s.acks).toEqual([]);
      s.sender.wake();
      expect(await done).toBe('done');
      expect(s.acks).toEqual([{ lines: 2, quarantined: 0 }]);
    }
  });

  it('an empty 2xx body and a 202 under wait=true acknowledge, flagged for one WARN; quarantined_rows are counted', async () => {
    const s = await scripted([
      { status: 200, body: '' },
      { status: 202, body: '{"successful_rows":0,"quarantined_rows":0}' },
      { status: 200, body: '{"successful_rows":1,"quarantined_rows":3}' },
    ]);
    for (let i = 0; i < 3; i++) expect(await s.sender.deliver(s.batch(4))).toBe('done');
    expect(s.odd).toEqual(['empty_body', 'accepted_under_wait']);
    expect(s.acks.map((a) => a.quarantined)).toEqual([0, 0, 3]);
    expect(s.parks).toEqual([]);
  });

  it('row counts that do not add up to the lines sent (5000 for 5, -5, 1e300) acknowledge, with one WARN, and count no absurd quarantine', async () => {
    const s = await scripted([
      { status: 200, body: '{"successful_rows":5000,"quarantined_rows":0}' },
      { status: 200, body: '{"successful_rows":10,"quarantined_rows":-5}' },
      { status: 200, body: '{"successful_rows":0,"quarantined_rows":1e300}' },
      { status: 200, body: '{"successful_rows":3,"quarantined_rows":2}' },
    ]);
    for (let i = 0; i < 4; i++) expect(await s.sender.deliver(s.batch(5))).toBe('done');
    expect(s.odd, 'each odd count is reported (the log warns once per streak: test/observe/odd-answers.test.ts)').toEqual(['counts_mismatch', 'counts_mismatch', 'counts_mismatch']);
    expect(s.counted, 'counts that add up end the streak').toEqual(['odd', 'odd', 'odd', 'add up']);
    expect(s.acks.map((a) => a.quarantined), 'only a count within the lines sent reaches spoolship_rows_quarantined_total').toEqual([0, 0, 0, 2]);
  });

  it('a 200 whose first 64 KiB are one JSON object and then only whitespace: an acknowledgement, its quarantined_rows counted', async () => {
    const url = await serve((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"successful_rows":1,"quarantined_rows":2}');
        res.end(Buffer.alloc(200 * 1024, 0x20));
      });
    });
    const outcome = await client(url).post('ds', Buffer.from('{}\n'), null);
    expect(outcome).toMatchObject({ kind: 'response', bodyTruncated: true });
    expect(classify(outcome, { attempt: 0, afterGoaway: false, http2: false, wait: true, now: 0, backoff: { initialMs: 1, maxMs: 1, multiplier: 2 }, random: () => 0 })).toEqual({
      kind: 'ack',
      quarantinedRows: 2,
      oddity: null,
      rows: { successful: 1, quarantined: 2 },
    });
  });

  it('an endless 200 body: the first 64 KiB are read, it is not JSON, so the budget parks and nothing is acknowledged', async () => {
    const url = await serve((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const chunk = Buffer.alloc(16 * 1024, 0x20);
        const pump = () => {
          while (!res.destroyed && res.write(chunk));
        };
        res.on('drain', pump);
        pump();
      });
    });
    const outcome = await client(url).post('ds', Buffer.from('{}\n'), null);
    expect(classify(outcome, { attempt: 0, afterGoaway: false, http2: false, wait: true, now: 0, backoff: { initialMs: 1, maxMs: 1, multiplier: 2 }, random: () => 0 })).toMatchObject({
      kind: 'park',
      reason: 'unexpected_response',
    });
  });
});

describe('Retry-After and X-RateLimit-Reset are bounded', () => {
  const now = Date.parse('2026-11-24T12:00:00Z');
  it.each([
    ['2147483648', 'invalid'],
    ['901', 'invalid'],
    ['-5', 'invalid'],
    ['Fri, 31 Dec 9999 23:59:59 GMT', 'invalid'],
    ['Tue, 24 Nov 2026 11:59:00 GMT', 'invalid'], // in the past
    ['soon', 'invalid'],
    ['7', 7000],
    ['900', 900_000],
    ['Tue, 24 Nov 2026 12:00:30 GMT', 30_000],
  ] as const)('Retry-After: %s -> %s', (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });
  it.each([
    [String(now / 1000 + 5), 5000], // epoch seconds
    [String(now / 1000 + 86_400), 'invalid'], // a day away
    ['3', 3000],
    ['2147483648', 'invalid'],
    ['-1', 'invalid'],
  ] as const)('X-RateLimit-Reset: %s -> %s', (value, expected) => {
    expect(parseRateLimitReset(value, now)).toBe(expected);
  });

  it('a 429 with an unusable Retry-After and a usable X-RateLimit-Reset waits for the reset, and flags the Retry-After for the WARN', () => {
    const answer = { kind: 'response', status: 429, retryAfter: '-5', rateLimitReset: '3', location: null, contentType: null, body: '', bodyTruncated: false } as const;
    const v = classify(answer, { attempt: 0, afterGoaway: false, http2: false, wait: true, now: 0, backoff: { initialMs: 1000, maxMs: 1000, multiplier: 2 }, random: () => 0.5 });
    expect(v).toEqual({ kind: 'retry', afterMs: 3000, reason: '429', pauseBudget: true, ignoredWait: 'Retry-After: -5' });
  });

  it('a 503 (or another 5xx) with a Retry-After waits for it, not for the backoff (Retry-After always wins), and pauses the budget; an absurd one backs off', async () => {
    const s = await scripted([
      { status: 503, headers: { 'retry-after': '3' } },
      { status: 502, headers: { 'retry-after': '2147483648' } },
    ]);
    const done = s.sender.deliver(s.batch(1));
    await settle(() => s.clock.waiting > 0, 'the wait after the 503');
    expect(s.clock.nextWakeInMs()).toBe(3000); // Retry-After, not the backoff's 500 ms
    s.clock.advance(3000);
    await settle(() => s.seen.length === 2 && s.clock.waiting > 0, 'the backoff after the 502');
    expect(s.clock.nextWakeInMs()).toBe(1000); // backoff (attempt 1: random 0.5 x 2000 ms)
    s.clock.advance(1000);
    expect(await done).toBe('done');
    expect(s.odd).toEqual(['ignored_wait']);
    const v = classify(
      { kind: 'response', status: 503, retryAfter: '3', rateLimitReset: null, location: null, contentType: null, body: '', bodyTruncated: false },
      { attempt: 0, afterGoaway: false, http2: false, wait: true, now: 0, backoff: { initialMs: 1000, maxMs: 1000, multiplier: 2 }, random: () => 0.5 },
    );
    expect(v).toEqual({ kind: 'retry', afterMs: 3000, reason: '5xx', pauseBudget: true, ignoredWait: null });
  });

  it('a 429 with an absurd Retry-After backs off instead, and is flagged once for a WARN', async () => {
    const s = await scripted([
      { status: 429, headers: { 'retry-after': '2147483648' } },
      { status: 429, headers: { 'retry-after': '-5' } },
    ]);
    const done = s.sender.deliver(s.batch(1));
    await settle(() => s.clock.waiting > 0, 'the first backoff');
    expect(s.clock.nextWakeInMs()).toBe(500); // backoff (random 0.5 x 1000 ms), not 68 years
    s.clock.advance(500);
    await settle(() => s.seen.length === 2 && s.clock.waiting > 0, 'the second backoff');
    expect(s.clock.nextWakeInMs()).toBe(1000);
    s.clock.advance(1000);
    expect(await done).toBe('done');
    expect(s.odd).toEqual(['ignored_wait', 'ignored_wait']); // the agent's hook warns once per streak
  });

  it('a Retry-After also holds the requests that had passed the pause check and waited for their turn in flight', async () => {
    // Two in flight at most. Of the first two requests on the wire, the first
    // answered gets 429 Retry-After: 5 (once both are there: on a busy machine
    // the second was still waiting for its rate slot when the 429 came, and
    // waited for the pause like the third); the other is answered only when
    // the test says. The third, past the pause check before the 429, waits
    // for a place in flight and gets the first's after it. It used to be sent
    // at once, inside the pause.
    let release!: () => void;
    let bothSeen!: () => void;
    const s = await scripted([
      { status: 429, headers: { 'retry-after': '5' }, hold: new Promise<void>((r) => (bothSeen = r)) },
      { status: 200, body: '{"successful_rows":1,"quarantined_rows":0}', hold: new Promise<void>((r) => (release = r)) },
    ]);
    const deliveries = [s.sender.deliver(s.batch(1)), s.sender.deliver(s.batch(1)), s.sender.deliver(s.batch(1))];
    await settle(() => s.seen.length === 2, 'two requests on the wire');
    bothSeen();
    // The 429 sleeps its Retry-After; the third waits on the clock for the pause too, or was sent.
    await settle(() => s.clock.waiting === 2 || s.seen.length > 2, 'the third request to wait or go');
    expect(s.seen, 'nothing sent during the pause').toHaveLength(2);
    release();
    await settle(() => s.acks.length === 1, 'the held request acknowledged');
    expect(s.seen, 'nothing sent during the pause').toHaveLength(2);
    expect(s.clock.nextWakeInMs()).toBe(5000);
    s.clock.advance(5000);
    expect(await Promise.all(deliveries)).toEqual(['done', 'done', 'done']);
    expect(s.seen).toHaveLength(4);
  });

  it('a wake (SIGHUP, a new token or client certificate) ends a backoff at once, but not a Retry-After pause', async () => {
    const s = await scripted([{ status: 503 }]);
    const backoff = s.sender.deliver(s.batch(1));
    await settle(() => s.clock.waiting === 1, 'the backoff after the 503');
    expect(s.clock.nextWakeInMs()).toBeGreaterThan(0);
    s.sender.wake();
    expect(await backoff).toBe('done');
    expect(s.seen).toHaveLength(2);

    const t = await scripted([{ status: 429, headers: { 'retry-after': '9' } }]);
    const paused = t.sender.deliver(t.batch(1));
    await settle(() => t.clock.waiting === 1, 'the Retry-After pause');
    t.sender.wake();
    await settle(() => t.clock.waiting === 1, 'still paused after the wake');
    expect(t.seen).toHaveLength(1);
    expect(t.clock.nextWakeInMs()).toBe(9000);
    t.clock.advance(9000);
    expect(await paused).toBe('done');
  });

  it('the 429 after which a batch moves to the disk queue pauses the budget too: the replay waits for Retry-After', async () => {
    const s = await scripted([{ status: 429, headers: { 'retry-after': '7' } }]);
    const b = s.batch(2);
    expect(await s.sender.deliver(b, { canDefer: () => true, deferAfter: 1 })).toBe('deferred');
    const replay = s.sender.deliver(b);
    await settle(() => s.clock.waiting > 0, 'the replay to wait');
    expect(s.clock.nextWakeInMs()).toBe(7000);
    expect(s.seen).toHaveLength(1);
    s.clock.advance(7000);
    expect(await replay).toBe('done');
    expect(s.seen).toHaveLength(2);
  });
});
