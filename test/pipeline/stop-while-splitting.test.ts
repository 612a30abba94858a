// A graceful stop while a batch is being cut by 400s: pieces acknowledged
// before the stop are never sent again (SPEC section 3: a graceful stop
// creates no duplicates unless a request is unanswered when
// shutdown_timeout_ms runs out). What is not resolved yet waits in the disk
// queue as pieces of their own and arrives once after the next start.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFor, expectExactlyOnce, jsonLines, rows, startAgent, startEmu, tempDir, waitFor, writeLines } from './helpers.js';

describe('a graceful stop during a 400 bisection', () => {
  it('sends no acknowledged piece again after the restart; every good line arrives once, the rejected lines are dead letters', async () => {
    const dir = await tempDir();
    // Every answer takes 60 ms: isolating 6 rejected lines in one batch of
    // 2,000 takes ~60 requests, one after the other. The stop allows 1.5 s,
    // of which a quarter is kept for writing state: the pieces left are
    // queued then.
    const emu = await startEmu(dir, { latencyMs: 60 });
    emu.setFaults([{ kind: 'reject_marker', marker: 'POISON' }]);
    const good = jsonLines('g', 0, 2000);
    const lines = [...good];
    for (const at of [1900, 1500, 1100, 700, 300, 40]) lines.splice(at, 0, `{"id":"POISON-${at}"}`);
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    const config = configFor(dir, emu, { batch: { max_bytes: 1_000_000, linger_ms: 50 }, shutdown_timeout_ms: 1500 });

    const first = await startAgent(config);
    // Some pieces are acknowledged, the bisection goes on; then every answer
    // is 403 (nothing stored): the budget parks, so no request is on the wire
    // when the stop comes, and none may be sent twice.
    await waitFor(() => rows(emu, dir, 'ev').length >= 300, 'first pieces stored');
    emu.setFaults([{ kind: 'status', status: 403 }]);
    await waitFor(() => first.agent.readiness().reasons.includes('token_rejected'), 'parked on the 403');
    await first.stop();
    const before = rows(emu, dir, 'ev').length;
    expect(before).toBeLessThan(good.length);
    emu.setFaults([{ kind: 'reject_marker', marker: 'POISON' }]);

    const second = await startAgent(config);
    await waitFor(() => rows(emu, dir, 'ev').length >= good.length, 'every good line', 60_000);
    // The rejected lines are dead letters, once each (some isolated before the stop, the rest after).
    const deadLetters = () => {
      const f = path.join(dir, 'state', 'dead-letter', 'ev.ndjson');
      return existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter((l) => l.includes('POISON')) : [];
    };
    await waitFor(() => deadLetters().length >= 6, 'six dead letters');
    await second.stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), good);
    expect(deadLetters().map((l) => (JSON.parse(l) as { line: string }).line).sort()).toEqual([40, 300, 700, 1100, 1500, 1900].map((n) => `{"id":"POISON-${n}"}`).sort());
  });

  it('the same for a batch sent from the disk queue: its record goes, the pieces left are queued anew', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { latencyMs: 60 });
    // An outage first: the batch moves to the disk queue after its quick attempts.
    emu.setFaults([{ kind: 'status', status: 503 }]);
    const good = jsonLines('q', 0, 2000);
    const lines = [...good];
    for (const at of [1900, 1500, 1100, 700, 300, 40]) lines.splice(at, 0, `{"id":"POISON-${at}"}`);
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    const config = configFor(dir, emu, { batch: { max_bytes: 1_000_000, linger_ms: 50 }, shutdown_timeout_ms: 1500 });

    const first = await startAgent(config);
    await waitFor(async () => / [1-9]\d*$/m.test(await first.agent.metrics.registry.getSingleMetricAsString('spoolship_queue_batches')), 'batch queued during the outage');
    // The outage ends: the queued batch is sent and cut by 400s; then 403s park the budget.
    emu.setFaults([{ kind: 'reject_marker', marker: 'POISON' }]);
    await waitFor(() => rows(emu, dir, 'ev').length >= 300, 'first pieces stored');
    emu.setFaults([{ kind: 'status', status: 403 }]);
    await waitFor(() => first.agent.readiness().reasons.includes('token_rejected'), 'parked on the 403');
    await first.stop();
    expect(rows(emu, dir, 'ev').length).toBeLessThan(good.length);
    emu.setFaults([{ kind: 'reject_marker', marker: 'POISON' }]);

    const second = await startAgent(config);
    await waitFor(() => rows(emu, dir, 'ev').length >= good.length, 'every good line', 60_000);
    const deadLetters = () => {
      const f = path.join(dir, 'state', 'dead-letter', 'ev.ndjson');
      return existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter((l) => l.includes('POISON')) : [];
    };
    await waitFor(() => deadLetters().length >= 6, 'six dead letters');
    await second.stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), good);
    expect(deadLetters()).toHaveLength(6);
  });

  it('with answers still coming, the stop starts no piece it could not wait for: nothing is cut, nothing sent twice', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { latencyMs: 60 });
    emu.setFaults([{ kind: 'reject_marker', marker: 'POISON' }]);
    const good = jsonLines('w', 0, 2000);
    const lines = [...good];
    for (const at of [1900, 1500, 1100, 700, 300, 40]) lines.splice(at, 0, `{"id":"POISON-${at}"}`);
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    const config = configFor(dir, emu, { batch: { max_bytes: 1_000_000, linger_ms: 50 }, shutdown_timeout_ms: 1500 });

    const first = await startAgent(config);
    await waitFor(() => rows(emu, dir, 'ev').length >= 300, 'first pieces stored');
    // The bisection is still running (one request after another) when the stop comes.
    await first.stop();
    const cut = first.agent.metrics.registry.getSingleMetricAsString('spoolship_requests_total');
    expect(await cut).not.toMatch(/status="error"/);
    expect(rows(emu, dir, 'ev').length).toBeLessThan(good.length);

    const second = await startAgent(config);
    await waitFor(() => rows(emu, dir, 'ev').length >= good.length, 'every good line', 60_000);
    await second.stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), good);
  });
});
