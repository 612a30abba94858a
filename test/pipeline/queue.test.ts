import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFor, expectByteIdenticalRetries, expectExactlyOnce, gauge, jsonLines, rows, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines } from './helpers.js';

describe('disk retry queue in the agent', () => {
  it('an outage moves batches to the disk queue, the spool is committed past them, and all arrive once afterwards', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    emu.setFaults([{ kind: 'status', status: 503 }]);
    const config = configFor(dir, emu, { batch: { max_bytes: 20_000 } });
    const lines = jsonLines('q', 0, 3000);
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    const { agent, stop } = await startAgent(config);
    await waitFor(async () => (await gauge(agent, 'spoolship_queue_batches')) >= 5, 'batches queued during the outage');
    expect(rows(emu, dir, 'ev')).toEqual([]);
    emu.setFaults([]);
    await waitForRows(emu, dir, 'ev', lines, 'all rows after the outage');
    await waitFor(async () => (await gauge(agent, 'spoolship_queue_batches')) === 0, 'queue drained');
    await stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), lines);
  });

  it('queued batches survive a restart and are sent first, byte-identical', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    emu.setFaults([{ kind: 'status', status: 503 }]);
    const config = configFor(dir, emu, { batch: { max_bytes: 20_000 } });
    const lines = jsonLines('r', 0, 2000);
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    const first = await startAgent(config);
    await waitFor(async () => (await gauge(first.agent, 'spoolship_queue_batches')) >= 3, 'batches queued');
    await first.stop();
    const failed = new Set(emu.requests().map((r) => r.decodedSha1));
    emu.setFaults([]);
    const before = emu.requests().length;
    const second = await startAgent(config);
    await waitForRows(emu, dir, 'ev', lines, 'rows after restart');
    await second.stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), lines);
    // What was queued is resent with the very bytes it failed with...
    expect(expectByteIdenticalRetries(emu.requests()), 'queued batches sent again').toBeGreaterThanOrEqual(3);
    // ...and before anything read after the restart.
    const resent = emu.requests().slice(before).map((r) => failed.has(r.decodedSha1));
    const queuedSent = resent.filter(Boolean).length;
    expect(resent.slice(0, queuedSent), 'the queued batches go first').toEqual(Array(queuedSent).fill(true));
  });

  it('a rejected token parks the budget, keeps the data in the queue, and /readyz says why', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const config = configFor(dir, emu, { api: { token: 'not-a-valid-token' } });
    const lines = jsonLines('p', 0, 200);
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    const { agent, stop } = await startAgent(config);
    await waitFor(() => !agent.readiness().ready, 'not ready');
    expect(agent.readiness().reasons).toContain('token_rejected');
    expect(await gauge(agent, 'spoolship_parked', '{reason="token_rejected"}')).toBe(1);
    await waitFor(async () => (await gauge(agent, 'spoolship_queue_batches')) >= 1, 'batch queued while parked');
    await stop();
    expect(rows(emu, dir, 'ev')).toEqual([]);
    // Fixed token: the queued batch is delivered after the restart.
    const fixed = configFor(dir, emu);
    const again = await startAgent(fixed);
    await waitForRows(emu, dir, 'ev', lines, 'rows with the right token');
    await again.stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), lines);
  });
});

describe('readiness during an outage', () => {
  it('/readyz says no_progress once batches wait in the queue and nothing was acknowledged for 10 linger periods', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    emu.setFaults([{ kind: 'status', status: 503 }]);
    const lines = jsonLines('n', 0, 500);
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    const { agent, stop } = await startAgent(configFor(dir, emu, { batch: { max_bytes: 5_000, linger_ms: 50 } }));
    await waitFor(async () => (await gauge(agent, 'spoolship_queue_batches')) >= 1, 'batches queued');
    const r = await waitFor(() => (agent.readiness().reasons.includes('no_progress') ? agent.readiness() : null), 'no_progress');
    expect(r.ready).toBe(false);
    emu.setFaults([]);
    await waitForRows(emu, dir, 'ev', lines, 'rows after the outage');
    await waitFor(() => agent.readiness().ready, 'ready again');
    await stop();
  });
});
