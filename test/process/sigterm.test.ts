// SIGTERM under load: the agent drains its in-flight requests, persists its
// state and exits 0 within shutdown_timeout_ms; the next start resumes with
// no duplicate and nothing missing (README "Commands" and "Delivery guarantee").
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkDelivery, errorsIn, lines, metric, sleep, spawnAgent, startEmu, tempDir, waitFor, waitForDelivery, writeConfig, type AgentProcess } from './helpers.js';

const SHUTDOWN_TIMEOUT_MS = 5000;

function steadyWriter(file: string, perTick: number, tickMs: number): { written: () => number; stop: () => void } {
  mkdirSync(path.dirname(file), { recursive: true });
  let n = 0;
  const timer = setInterval(() => {
    appendFileSync(file, lines('s', n, perTick));
    n += perTick;
  }, tickMs);
  return { written: () => n, stop: () => clearInterval(timer) };
}

async function sigterm(p: AgentProcess): Promise<{ code: number | null; ms: number }> {
  const at = Date.now();
  p.child.kill('SIGTERM');
  const exit = await p.exited;
  return { code: exit.code, ms: exit.at - at };
}

describe('SIGTERM (process)', () => {
  it('a handle left open (a library timer that is never cleared) does not keep a stopped agent alive: it exits right after "stopped"', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t, { shutdown_timeout_ms: SHUTDOWN_TIMEOUT_MS });
    // What a library could leave behind; without run's explicit exit the event loop would never end.
    const preload = path.join(dir, 'keep-alive.cjs');
    writeFileSync(preload, 'setInterval(() => {}, 1 << 30);\n');
    const p = spawnAgent(cfg.configFile, { NODE_OPTIONS: `--require ${preload}` });
    await p.started;
    p.child.kill('SIGTERM');
    const exit = await p.exited;
    expect(exit.code).toBe(0);
    expect(p.logs.at(-1)?.msg).toBe('stopped');
  });

  it('under load: exit 0 within shutdown_timeout_ms, then a restart with zero duplicates and nothing missing', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir, { faults: [{ kind: 'slow', delay_ms: 300 }] });
    const cfg = await writeConfig(dir, t, { batch: { max_bytes: 10_000, linger_ms: 100 }, shutdown_timeout_ms: SHUTDOWN_TIMEOUT_MS });
    const w = steadyWriter(path.join(cfg.spoolDir, 'ev', 'a.ndjson'), 40, 20);
    try {
      const first = spawnAgent(cfg.configFile);
      const startedAt = Date.now();
      await first.started;
      await waitFor(() => t.records.filter((r) => r.at > startedAt && r.outcome === 200).length >= 10, 'shipping under load');
      // The signal must find requests in flight: wait for one at the emulator.
      await waitFor(() => t.inFlight() > 0, 'a request in flight', 20_000, 5);
      const at = Date.now();
      const stop1 = await sigterm(first);
      const inFlight = t.records.filter((r) => r.at <= at && r.doneAt >= at).length;
      expect(stop1.code).toBe(0);
      expect(stop1.ms).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
      expect(inFlight, 'requests were in flight at the SIGTERM').toBeGreaterThan(0);
      expect(first.logs.at(-1)?.msg).toBe('stopped');
      expect(errorsIn(first)).toEqual([]);

      const second = spawnAgent(cfg.configFile);
      await second.started;
      // Nothing was unacknowledged at the graceful stop: nothing to resend.
      expect(second.logs.some((l) => l.event === 'resending_unacknowledged')).toBe(false);
      await sleep(1000); // keep writing while the second run ships
      w.stop();
      const total = w.written();
      // Stopped before any assertion (a failed wait's message is kept for after).
      const waited = await waitForDelivery(t, 'ev', 's', total, `all ${total} lines`, { everyMs: 250 }).then(() => null, (err: unknown) => err);
      const stop2 = await sigterm(second);
      if (waited) throw waited;
      expect(stop2.code).toBe(0);
      const result = await checkDelivery(t, 'ev', 's', total);
      console.log(`[sigterm load] ${JSON.stringify({ inFlightAtSigterm: inFlight, stopMs: [stop1.ms, stop2.ms], ...result })}`);
      expect({ missing: result.missing, duplicates: result.duplicates, unexpected: result.unexpected }).toEqual({ missing: 0, duplicates: 0, unexpected: 0 });
    } finally {
      w.stop();
    }
  });

  it('during an outage: exit 0 within shutdown_timeout_ms with the waiting batches on disk, delivered once after the restart', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t, { batch: { max_bytes: 10_000, linger_ms: 100 }, retry: { initial_ms: 200, max_ms: 2000 }, shutdown_timeout_ms: SHUTDOWN_TIMEOUT_MS });
    const file = path.join(cfg.spoolDir, 'ev', 'a.ndjson');
    mkdirSync(path.dirname(file), { recursive: true });
    appendFileSync(file, lines('s', 0, 1000));
    const first = spawnAgent(cfg.configFile);
    const admin = (await first.started)!;
    await waitForDelivery(t, 'ev', 's', 1000, 'the first 1000 lines');
    t.emu.setFaults([{ kind: 'status', status: 503 }]);
    appendFileSync(file, lines('s', 1000, 2000));
    await waitFor(async () => (await metric(admin, 'spoolship_requests_total', 'status="503"')) >= 5, 'batches failing');
    const stop1 = await sigterm(first);
    expect(stop1.code).toBe(0);
    expect(stop1.ms).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
    expect(errorsIn(first)).toEqual([]);
    t.emu.setFaults([]);
    const second = spawnAgent(cfg.configFile);
    await second.started;
    const waited = await waitForDelivery(t, 'ev', 's', 3000, 'all 3000 lines', { everyMs: 250 }).then(() => null, (err: unknown) => err);
    const stop2 = await sigterm(second);
    if (waited) throw waited;
    expect(stop2.code).toBe(0);
    const result = await checkDelivery(t, 'ev', 's', 3000);
    console.log(`[sigterm outage] ${JSON.stringify({ stopMs: [stop1.ms, stop2.ms], requests: t.emu.stats().requests_by_status, ...result })}`);
    expect({ missing: result.missing, duplicates: result.duplicates, unexpected: result.unexpected }).toEqual({ missing: 0, duplicates: 0, unexpected: 0 });
  });
  it('during a SIGHUP reload that drains unanswered requests: exit 0 within shutdown_timeout_ms of the SIGTERM, the new pipeline never started', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir, { faults: [{ kind: 'hang', p: 1 }] });
    const timeoutMs = 3000;
    const cfg = await writeConfig(dir, t, { shutdown_timeout_ms: timeoutMs });
    mkdirSync(path.join(cfg.spoolDir, 'ev'), { recursive: true });
    appendFileSync(path.join(cfg.spoolDir, 'ev', 'a.ndjson'), lines('h', 0, 500));
    const p = spawnAgent(cfg.configFile);
    await p.started;
    await waitFor(() => t.records.some((r) => r.outcome === 'hang'), 'a request left unanswered');
    // A changed config: the reload drains the old pipeline (bounded by shutdown_timeout_ms).
    await writeConfig(dir, t, { shutdown_timeout_ms: timeoutMs, batch: { linger_ms: 200 } });
    p.child.kill('SIGHUP');
    await waitFor(() => p.logs.some((l) => l.event === 'reloading'), 'the reload draining');
    const stop = await sigterm(p);
    expect(stop.code).toBe(0);
    // Not the reload's drain and then a second whole timeout for a pipeline started meanwhile.
    expect(stop.ms, 'SPEC section 1: exit within shutdown_timeout_ms').toBeLessThan(timeoutMs);
    expect(p.logs.filter((l) => l.event === 'started'), 'no new pipeline started after the SIGTERM').toHaveLength(1);
    // Nothing was stored; a restart against a healthy server sends every line once.
    t.emu.setFaults([]);
    const again = spawnAgent(cfg.configFile);
    await again.started;
    await waitForDelivery(t, 'ev', 'h', 500, 'every line after the restart');
    expect((await sigterm(again)).code).toBe(0);
    expect((await checkDelivery(t, 'ev', 'h', 500)).duplicates).toBe(0);
  });
});
