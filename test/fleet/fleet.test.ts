// Three agent processes share one organization's budget through a real
// Redis, against one emulator that enforces 100 requests in any sliding
// second (README "How each server answer is handled"). Each agent alone has a backlog that would take
// 100 req/s, so together they offer ~3x the limit.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { AgentProcess, lines } from './agents.js';
import { busiestWindow, waitFor } from './helpers.js';
import { RedisServer } from './redis-server.js';

const LIMIT = 100;
/** batch.max_bytes: a request holds ~10 lines of ~90 bytes, so 3000 lines are ~300 requests. */
const BATCH_BYTES = 1000;

let redis: RedisServer;
let dir: string;
beforeAll(async () => {
  redis = await RedisServer.start();
});
afterAll(async () => {
  await redis?.destroy();
});

const running: AgentProcess[] = [];
let emu: Emulator | null = null;
afterEach(async () => {
  for (const a of running.splice(0)) await a.kill();
  await emu?.close();
  emu = null;
  if (!redis.pid) await redis.restart();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function fleet(n: number, linesEach: number, fallbackRps: number): Promise<{ agents: AgentProcess[]; expected: Map<string, string[]> }> {
  dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-fleet-'));
  emu = await startEmulator({ listen: '127.0.0.1:0', dataDir: path.join(dir, 'emu'), rps: LIMIT, recordRequests: true });
  const budgetId = `fleet-${process.pid}-${Date.now()}`;
  const expected = new Map<string, string[]>();
  const files = new Map<string, string>();
  const configs = [];
  for (let i = 1; i <= n; i++) {
    const home = path.join(dir, `agent${i}`);
    const ds = `fleet_agent${i}`;
    const body = lines(ds, linesEach);
    expected.set(ds, body);
    await mkdir(path.join(home, 'spool', ds), { recursive: true });
    files.set(path.join(home, 'spool', ds, 'app.ndjson'), `${body.join('\n')}\n`);
    configs.push({
      name: `agent${i}`,
      home,
      config: {
        api: { base_url: emu.url, token: emu.token, timeout_ms: 10_000 },
        spool: { dir: path.join(home, 'spool'), idle_ms: 200, max_line_bytes: BATCH_BYTES },
        state_dir: path.join(home, 'state'),
        batch: { max_bytes: BATCH_BYTES, linger_ms: 200 },
        compression: { codec: 'none' },
        limits: { requests_per_second: LIMIT, budget_id: budgetId, redis_url: redis.url, fallback_requests_per_second: fallbackRps },
        retry: { initial_ms: 100, max_ms: 2000 },
        admin: { listen: '127.0.0.1:0' },
        log: { level: 'info', format: 'json' },
      },
    });
  }
  const agents = await Promise.all(configs.map((c) => AgentProcess.start(c.name, c.home, c.config)));
  running.push(...agents);
  // The backlogs appear only once every agent is up (not while another is
  // still loading its modules), so they compete from the first request.
  await Promise.all([...files].map(([file, text]) => writeFile(file, text)));
  return { agents, expected };
}

async function stored(ds: string): Promise<string[]> {
  const text = await readFile(path.join(dir, 'emu', `${ds}.ndjson`), 'utf8').catch(() => '');
  return text ? text.slice(0, -1).split('\n') : [];
}

/** From the emulator's counters: cheap enough to poll without slowing the emulator that timestamps the requests. */
function allArrived(expected: Map<string, string[]>): boolean {
  const rows = emu!.stats().rows;
  for (const [ds, want] of expected) if ((rows[ds] ?? 0) < want.length) return false;
  return true;
}

async function expectExactlyOnce(expected: Map<string, string[]>): Promise<void> {
  for (const [ds, want] of expected) {
    const got = await stored(ds);
    const seen = new Set(got);
    expect({ ds, missing: want.filter((l) => !seen.has(l)).length, duplicates: got.length - seen.size }).toEqual({ ds, missing: 0, duplicates: 0 });
  }
}

/** From the emulator's records: `spanMs` from the first request's arrival to the last's. */
function requestStats(e: Emulator): { total: number; busiest: number; rejected429: number; spanMs: number } {
  const reqs = e.requests();
  const at = reqs.map((r) => r.at);
  const spanMs = at.length === 0 ? 0 : Math.max(...at) - Math.min(...at);
  return { total: reqs.length, busiest: busiestWindow(at), rejected429: reqs.filter((r) => r.outcome === 429).length, spanMs };
}

describe('a fleet of agents on one Redis budget', () => {
  it('three agents offering ~3x the limit stay <= 100 requests in any sliding second at the server, and every line arrives', async () => {
    const { agents, expected } = await fleet(3, 3000, 20);
    await waitFor(() => allArrived(expected), 'every line at the emulator', 60_000);
    for (const a of agents) expect(await a.stop()).toBe(0);
    await expectExactlyOnce(expected);

    const s = requestStats(emu!);
    console.log(`fleet x3: ${s.total} requests over ${s.spanMs} ms, busiest sliding second ${s.busiest}, 429s ${s.rejected429}`);
    // ~900 requests of ~10 lines: at <= 100/s their arrivals at the server span at least ~8 s.
    expect(s.total).toBeGreaterThanOrEqual(850);
    expect(s.spanMs).toBeGreaterThanOrEqual(((s.total - LIMIT) / LIMIT) * 1000);
    expect(s.busiest).toBeLessThanOrEqual(LIMIT);
    expect(s.rejected429).toBeLessThanOrEqual(2);
    // Shared fairly: with equal backlogs, no agent finishes long before the
    // others, beyond how much later it started (a file written just after
    // start is found by the directory watch or, until that is set up, by the
    // next rescan: up to 1 s).
    const reqs = emu!.requests();
    const times = (ds: string) => reqs.filter((r) => r.name === ds).map((r) => r.at);
    const firstAt = [...expected.keys()].map((ds) => Math.min(...times(ds)));
    const finished = [...expected.keys()].map((ds) => Math.max(...times(ds)));
    const startSkew = Math.max(...firstAt) - Math.min(...firstAt);
    expect(Math.max(...finished) - Math.min(...finished)).toBeLessThan(s.spanMs * 0.2 + startSkew);
    for (const a of agents) {
      expect(a.logs.some((l) => l.msg.startsWith('joined the shared request budget'))).toBe(true);
      expect(a.logs.filter((l) => l.level >= 50 || /budget/.test(l.msg)).map((l) => l.msg)).toEqual([expect.stringMatching(/^joined the shared request budget/)]);
    }
  });

  it('Redis killed mid-run: shipping goes on at the fallback budget with /readyz 200, then the agents rejoin the restarted Redis; nothing is lost', async () => {
    const { agents, expected } = await fleet(3, 2500, 20);
    await waitFor(() => emu!.requests().length >= 80, 'the first shared-budget requests', 60_000);

    await redis.kill();
    for (const a of agents) await waitFor(async () => (await a.metric('spoolship_limiter_fallback')) === 1, `${a.name}: spoolship_limiter_fallback 1`);
    // On the fallback budget the agent is ready: not parked, shipping. (Right
    // at the switch a loaded machine may go 10 linger periods without an
    // acknowledgement, no_progress; it clears with the next one.)
    for (const a of agents) {
      const ready = await waitFor(async () => {
        const r = await a.readyz();
        return r.status === 200 ? r : null;
      }, `${a.name}: /readyz 200 on the fallback budget`);
      expect(ready).toEqual({ status: 200, body: { ready: true, reasons: [] } });
      expect(await a.metric('spoolship_limiter_fallback')).toBe(1);
    }
    const atFallback = emu!.requests().length;
    await waitFor(() => emu!.requests().length >= atFallback + 60, 'requests sent on the fallback budget', 60_000);
    expect(allArrived(expected)).toBe(false);

    await redis.restart();
    for (const a of agents) await waitFor(async () => (await a.metric('spoolship_limiter_fallback')) === 0, `${a.name}: back on the shared budget`);
    const atRejoin = emu!.requests().length;
    await waitFor(() => allArrived(expected), 'every line at the emulator', 60_000);
    expect(emu!.requests().length).toBeGreaterThan(atRejoin);
    for (const a of agents) expect(await a.stop()).toBe(0);
    await expectExactlyOnce(expected);

    const s = requestStats(emu!);
    console.log(`fleet x3 with a Redis restart: ${s.total} requests, busiest sliding second ${s.busiest}, 429s ${s.rejected429}`);
    expect(s.busiest).toBeLessThanOrEqual(LIMIT);
    expect(s.rejected429).toBeLessThanOrEqual(2);
    for (const a of agents) {
      // One WARN for the outage, one INFO for the return, no ERROR.
      expect(a.logs.filter((l) => l.level >= 50 || /budget/.test(l.msg)).map((l) => `${l.level} ${l.msg}`)).toEqual([
        expect.stringMatching(/^30 joined the shared request budget/),
        expect.stringMatching(/^40 shared request budget unreachable \(Redis\): shipping on the local fallback budget/),
        expect.stringMatching(/^30 Redis reachable again: back on the shared request budget/),
      ]);
    }
  });
});
