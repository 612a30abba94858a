// The shared request budget against a real redis-server: several limiters
// (each with its own connections, like separate agents) on one budget_id
// share one spacing; losing Redis falls back to the local budget, logged
// once; a restarted (empty) Redis is rejoined.
import { spawnSync } from 'node:child_process';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, deriveBudgetId } from '../../src/sender/limiter-factory.js';
import { budgetKey, RedisLimiter } from '../../src/sender/redis-limiter.js';
import { busiestWindow, waitFor } from './helpers.js';
import { freePort, RedisServer } from './redis-server.js';

let redis: RedisServer;
beforeAll(async () => {
  redis = await RedisServer.start();
});
afterAll(async () => {
  await redis?.destroy();
});

const open: RedisLimiter[] = [];
afterEach(async () => {
  while (open.length > 0) await open.pop()!.close();
  if (!redis.pid) await redis.restart();
});

interface Probe {
  limiter: RedisLimiter;
  fallback: boolean[];
  logs: Array<{ level: number; msg: string }>;
}

async function limiter(budgetId: string, o: { url?: string; rps?: number; fallbackRps?: number } = {}): Promise<Probe> {
  const fallback: boolean[] = [];
  const logs: Probe['logs'] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) logs.push(JSON.parse(line) as Probe['logs'][number]);
      cb();
    },
  });
  const l = await RedisLimiter.start({
    redisUrl: o.url ?? redis.url,
    budgetId,
    requestsPerSecond: o.rps ?? 100,
    fallbackRequestsPerSecond: o.fallbackRps ?? 20,
    log: pino({ level: 'info' }, sink),
    onFallback: (active) => fallback.push(active),
    joinTimeoutMs: 500,
    commandTimeoutMs: 1000,
    rejoinEveryMs: 100,
  });
  open.push(l);
  return { limiter: l, fallback, logs };
}

/** `workers` concurrent callers (like max_in_flight) take `count` slots in all; returns the start times. */
async function drive(l: RedisLimiter, count: number, workers = 8): Promise<number[]> {
  const times: number[] = [];
  let left = count;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (left > 0) {
        left--;
        await l.acquire();
        times.push(Date.now());
      }
    }),
  );
  return times;
}

const uniqueId = (name: string) => `${name}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;

describe('shared request budget over Redis', () => {
  it('three limiters on one budget_id together stay at or under requests_per_second in any sliding second', async () => {
    const id = uniqueId('shared');
    const ls = await Promise.all([limiter(id), limiter(id), limiter(id)]);
    const times = (await Promise.all(ls.map((p) => drive(p.limiter, 100)))).flat();
    // 300 grants spaced across the three: at least 299 spacings of 10 ms from the first to the last (unshared: a third of that).
    expect(Math.max(...times) - Math.min(...times)).toBeGreaterThanOrEqual(299 * 10);
    // Grant times are read through this busy event loop (three limiters, 24
    // callers) on a shared 2-core machine, so allow observer jitter here
    // (unshared, this would be ~300); fleet.test.ts holds the agents to
    // <= 100 at the emulator itself.
    const busiest = busiestWindow(times);
    expect(busiest).toBeLessThanOrEqual(110);
    expect(ls.every((p) => !p.limiter.usingFallback && p.fallback.join() === 'false')).toBe(true);
  });

  it('different budget_ids do not share', async () => {
    const ids = [uniqueId('a'), uniqueId('b')];
    const [a, b] = await Promise.all(ids.map((id) => limiter(id)));
    await Promise.all([drive(a.limiter, 120), drive(b.limiter, 120)]);
    // Each reserved its slots under a key of its own budget_id (one key for both would leave one of these unset).
    const next = await Promise.all(ids.map(async (id) => Number(await redis.command('GET', budgetKey(id)))));
    expect(next.every((n) => n > 0)).toBe(true);
  });

  it('a stalled process drops its stale slots instead of sending them in a burst', async () => {
    const p = await limiter(uniqueId('stall'));
    const times: number[] = [];
    const pending = Array.from({ length: 8 }, () => p.limiter.acquire().then(() => times.push(performance.now())));
    // Let the reservations go out, then block this event loop past all eight slots (~75 ms).
    await new Promise((r) => setTimeout(r, 5));
    const stallEnd = performance.now() + 200;
    while (performance.now() < stallEnd);
    await Promise.all(pending);
    // Woken together, they would all start now; the stale ones reserve again, a spacing apart.
    const within20ms = Math.max(...times.map((t) => times.filter((u) => u >= t && u < t + 20).length));
    expect(within20ms).toBeLessThanOrEqual(4);
    expect(Math.max(...times) - Math.min(...times)).toBeGreaterThanOrEqual(40);
  });

  it('falls back to the local budget when Redis dies (logged once), keeps granting, and rejoins a restarted Redis', async () => {
    const id = uniqueId('failover');
    const p = await limiter(id, { fallbackRps: 20 });
    await drive(p.limiter, 20);
    expect(p.limiter.usingFallback).toBe(false);

    await redis.kill();
    await waitFor(() => p.limiter.usingFallback, 'the limiter to notice Redis is gone');
    expect(p.fallback).toEqual([false, true]);
    // Keeps granting on the fallback budget, at its rate (21 grants: >= 20 gaps of 50 ms), while rejoin attempts fail.
    const started = Date.now();
    await drive(p.limiter, 21);
    expect(Date.now() - started).toBeGreaterThanOrEqual(20 * 50);
    expect(p.limiter.usingFallback).toBe(true);
    const warns = p.logs.filter((l) => l.level === 40);
    expect(warns).toHaveLength(1);
    expect(warns[0]!.msg).toMatch(/fallback/);

    await redis.restart();
    await waitFor(() => !p.limiter.usingFallback, 'the limiter to rejoin the restarted Redis');
    expect(p.fallback).toEqual([false, true, false]);
    await drive(p.limiter, 10);
    expect(await redis.command('EXISTS', budgetKey(id))).toBe('1');
    expect(p.logs.filter((l) => l.level === 40)).toHaveLength(1);
  });

  it('a poisoned budget key (a slot a day away) is broken: fall back at once with a log, reset it, rejoin', async () => {
    const id = uniqueId('poison');
    const p = await limiter(id, { fallbackRps: 50 });
    await drive(p.limiter, 3);
    // Someone sets the key to "now + 1 day" (microseconds, as the script keeps it).
    const dayAheadUs = (Date.now() + 86_400_000) * 1000;
    await redis.command('SET', budgetKey(id), String(dayAheadUs));
    // A request must not wait a day: it is granted (on the fallback) and the limiter says why.
    await drive(p.limiter, 2);
    expect(p.fallback).toContain(true);
    const broken = p.logs.filter((l) => (l as { event?: string }).event === 'budget_broken');
    expect(broken).toHaveLength(1);
    // The rejoin resets the key and logs that it did; the shared budget is used again.
    await waitFor(() => !p.limiter.usingFallback, 'the limiter to rejoin');
    expect(p.logs.some((l) => (l as { event?: string }).event === 'budget_key_repaired')).toBe(true);
    expect(Number(await redis.command('GET', budgetKey(id)))).toBeLessThan(dayAheadUs);
    await drive(p.limiter, 3);
    expect(p.limiter.usingFallback).toBe(false);
  });

  it('a pause key set a day ahead is broken the same way: never a day of silence (SPEC: a pause is at most 900 s)', async () => {
    const id = uniqueId('poison-pause');
    const p = await limiter(id, { fallbackRps: 50 });
    await drive(p.limiter, 2);
    const dayAheadUs = (Date.now() + 86_400_000) * 1000;
    await redis.command('SET', `${budgetKey(id)}:pause`, String(dayAheadUs));
    // Granted on the fallback at once, with the reason logged once.
    await drive(p.limiter, 2);
    expect(p.fallback).toContain(true);
    expect(p.logs.filter((l) => (l as { event?: string }).event === 'budget_broken')).toHaveLength(1);
    // The rejoin clears the broken pause; the shared budget is used again.
    await waitFor(() => !p.limiter.usingFallback, 'the limiter to rejoin');
    expect(await redis.command('GET', `${budgetKey(id)}:pause`)).toBeNull();
    await drive(p.limiter, 2);
    expect(p.limiter.usingFallback).toBe(false);
  });

  it('a key holding nonsense is broken the same way', async () => {
    const id = uniqueId('nonsense');
    const p = await limiter(id);
    await redis.command('SET', budgetKey(id), 'not-a-number');
    await drive(p.limiter, 2);
    expect(p.logs.filter((l) => (l as { event?: string }).event === 'budget_broken')).toHaveLength(1);
    await waitFor(() => !p.limiter.usingFallback, 'the limiter to rejoin');
  });

  it.each([
    ['the budget key', (id: string) => budgetKey(id)],
    ['the pause key', (id: string) => `${budgetKey(id)}:pause`],
  ])('%s holding another Redis type (a hash) is broken the same way and repaired, not taken for an unreachable Redis', async (_what, keyOf) => {
    const id = uniqueId('wrongtype');
    const p = await limiter(id);
    await drive(p.limiter, 2);
    await redis.command('DEL', keyOf(id));
    await redis.command('HSET', keyOf(id), 'a', 'b');
    await drive(p.limiter, 2);
    expect(p.logs.filter((l) => (l as { event?: string }).event === 'budget_broken')).toHaveLength(1);
    expect(p.logs.filter((l) => (l as { event?: string }).event === 'budget_unreachable')).toEqual([]);
    await waitFor(() => !p.limiter.usingFallback, 'the limiter to rejoin');
    expect(await redis.command('TYPE', keyOf(id))).not.toBe('hash');
    await drive(p.limiter, 2);
    expect(p.limiter.usingFallback).toBe(false);
  });

  it("a 429's pause is shared: another agent of the budget gets no slot before it ends; it is clamped to 900 s", async () => {
    const id = uniqueId('pause');
    const [a, b] = await Promise.all([limiter(id), limiter(id)]);
    await drive(a.limiter, 1);
    a.limiter.pause(600);
    // The pause is written before B asks: wait until Redis holds it.
    await waitFor(async () => (await redis.command('EXISTS', `${budgetKey(id)}:pause`)) === '1', 'the pause key');
    const asked = Date.now();
    await b.limiter.acquire();
    expect(Date.now() - asked).toBeGreaterThanOrEqual(500);
    expect(b.limiter.usingFallback).toBe(false);
    // An absurd pause is clamped: the key expires within 900 s (+1 s), not in decades.
    a.limiter.pause(2_147_483_648_000);
    await waitFor(async () => Number(await redis.command('PTTL', `${budgetKey(id)}:pause`)) > 1000, 'the long pause');
    expect(Number(await redis.command('PTTL', `${budgetKey(id)}:pause`))).toBeLessThanOrEqual(901_000);
  });

  it('close() returns, and ends a request waiting for a slot, inside a 10-minute pause', async () => {
    const id = uniqueId('closing');
    const p = await limiter(id);
    p.limiter.pause(600_000);
    await waitFor(async () => (await redis.command('EXISTS', `${budgetKey(id)}:pause`)) === '1', 'the pause key');
    const waiting = p.limiter.acquire().then(
      () => 'granted',
      () => 'rejected',
    );
    await new Promise((r) => setImmediate(r));
    // Waiting the pause out would time the test out.
    await p.limiter.close();
    open.splice(open.indexOf(p.limiter), 1);
    expect(['granted', 'rejected']).toContain(await waiting);
  });

  it('a budget lost while idle flips the gauge without waiting for a request', async () => {
    const p = await limiter(uniqueId('idle'));
    await redis.kill();
    await waitFor(() => p.fallback.length === 2, 'onFallback(true) with no request in progress');
    expect(p.fallback).toEqual([false, true]);
  });

  it('starts on the fallback when Redis is unreachable at start, and joins when it appears', async () => {
    const port = await freePort();
    const p = await limiter(uniqueId('late'), { url: `redis://127.0.0.1:${port}` });
    expect(p.limiter.usingFallback).toBe(true);
    expect(p.fallback).toEqual([true]);
    await drive(p.limiter, 5);
    // The agent's Redis is the shared test server; point a second limiter at it to prove the join path.
    const q = await limiter(uniqueId('late'), { url: redis.url });
    expect(q.limiter.usingFallback).toBe(false);
  });

  it('createLimiter uses the local budget without redis_url and the shared one with it', async () => {
    const base = { requests_per_second: 100, budget_id: null, max_in_flight: 8, max_in_flight_cap: 64, max_in_flight_bytes: 48 * 1024 * 1024, max_connections: 8, redis_ca_file: null, fallback_requests_per_second: 10 };
    const ctx = { baseUrl: 'https://api.example.com', token: 'p.secret', log: pino({ level: 'silent' }), onFallback: () => undefined };
    const local = await createLimiter({ ...ctx, limits: { ...base, redis_url: null } });
    expect(local).not.toBeInstanceOf(RedisLimiter);
    await local.close();
    const shared = await createLimiter({ ...ctx, limits: { ...base, redis_url: redis.url } });
    expect(shared).toBeInstanceOf(RedisLimiter);
    open.push(shared as RedisLimiter);
    expect(await redis.command('EXISTS', budgetKey(deriveBudgetId(ctx.baseUrl, ctx.token)))).toBe('1');
  });
});

// limits.redis_url with an ACL user (redis://user:password@) and TLS
// (rediss://, limits.redis_ca_file), against a real redis-server configured
// for each; the password never reaches a log line.
describe('Redis with ACL users and TLS', () => {
  const PASSWORD = 'pw-9f3c1e-never-logged';
  const ctx = { baseUrl: 'https://api.test', token: 'p.secret', onFallback: () => undefined };

  function capture(): { log: pino.Logger; text: () => string } {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(chunk.toString('utf8'));
        cb();
      },
    });
    return { log: pino({ level: 'debug' }, sink), text: () => lines.join('') };
  }

  function limits(url: string, ca: string | null = null) {
    return { requests_per_second: 100, budget_id: null, max_in_flight: 8, max_in_flight_cap: 8, max_in_flight_bytes: 1e6, max_connections: 8, redis_url: url, redis_ca_file: ca, fallback_requests_per_second: 10 };
  }

  it('redis://user:password@ joins as that ACL user; a wrong password falls back; neither password is logged', async () => {
    const acl = await RedisServer.start(() => ['--user', 'default', 'reset', 'on', 'nopass', '+ping', '--user', 'spool', 'on', `>${PASSWORD}`, '~*', '&*', '+@all']);
    try {
      const good = capture();
      const shared = (await createLimiter({ ...ctx, log: good.log, limits: limits(`redis://spool:${PASSWORD}@127.0.0.1:${acl.port}`) })) as RedisLimiter;
      open.push(shared);
      expect(shared.usingFallback).toBe(false);
      await shared.acquire();
      const wrong = capture();
      const refused = (await createLimiter({ ...ctx, log: wrong.log, limits: limits(`redis://spool:not-${PASSWORD}@127.0.0.1:${acl.port}`) })) as RedisLimiter;
      open.push(refused);
      expect(refused.usingFallback).toBe(true);
      expect(wrong.text()).toMatch(/WRONGPASS|invalid username-password/i);
      for (const t of [good.text(), wrong.text()]) expect(t).not.toContain(PASSWORD);
    } finally {
      await acl.destroy();
    }
  });

  it('rediss:// with limits.redis_ca_file joins over TLS; without the CA it falls back naming the certificate', async () => {
    const tls = await RedisServer.start((dir) => {
      const key = `${dir}/key.pem`;
      const cert = `${dir}/cert.pem`;
      const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { stdio: 'ignore' });
      if (r.status !== 0) throw new Error('openssl could not make the test certificate');
      return ['--tls-port', String(tlsPort), '--tls-cert-file', cert, '--tls-key-file', key, '--tls-ca-cert-file', cert, '--tls-auth-clients', 'no'];
    });
    try {
      const url = `rediss://127.0.0.1:${tlsPort}`;
      const trusted = capture();
      const shared = (await createLimiter({ ...ctx, log: trusted.log, limits: limits(url, `${tls.dir}/cert.pem`) })) as RedisLimiter;
      open.push(shared);
      expect(shared.usingFallback).toBe(false);
      await shared.acquire();
      const untrusted = capture();
      const refused = (await createLimiter({ ...ctx, log: untrusted.log, limits: limits(url) })) as RedisLimiter;
      open.push(refused);
      expect(refused.usingFallback).toBe(true);
      expect(untrusted.text()).toMatch(/certificate/i);
    } finally {
      await tls.destroy();
    }
  });
  let tlsPort = 0;
  beforeAll(async () => {
    tlsPort = await freePort();
  });
});

describe('budget_id derivation', () => {
  it('derives a stable id from the API origin and token, never containing the token', () => {
    const a = deriveBudgetId('https://api.example.com', 'p.secret-token');
    expect(a).toMatch(/^auto-[0-9a-f]{16}$/);
    expect(a).not.toContain('secret');
    expect(deriveBudgetId('https://API.example.com/', 'p.secret-token')).toBe(a);
    expect(deriveBudgetId('https://api.example.com', 'p.other-token')).not.toBe(a);
    expect(deriveBudgetId('https://api.eu.example.com', 'p.secret-token')).not.toBe(a);
  });
});
