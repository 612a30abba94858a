// A DaemonSet-like start: 12 new Data Source directories against a platform
// that knows 3 of them. With a token that may only append, the 3 ship; the 9
// park one by one (datasource_rejected), shown in status and /readyz; one
// misnamed directory never stops the rest. With a token that may create
// them, everything ships: the creations past 5 a minute wait for their 429's
// Retry-After.
import { renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StatusReport } from '../../src/report/report.js';
import { configFor, gauge, jsonLines, rows, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines } from '../pipeline/helpers.js';
import { JumpClock } from '../support/jump-clock.js';

/** The two lines written to each Data Source's directory. */
const linesOf = (ds: string): string[] => [`{"ds":"${ds}"}`, `{"ds":"${ds}","n":2}`];

describe('datasource_rejected (agent against the emulator)', () => {
  it('with an append-only token, the 3 known Data Sources ship and the 9 unknown ones park alone', async () => {
    const dir = await tempDir();
    const known = ['ds_a', 'ds_b', 'ds_c'];
    const unknown = Array.from({ length: 9 }, (_, i) => `new_${i}`);
    const emu = await startEmu(dir, { datasources: known, appendTokens: ['append-only-token'], rps: 1000 });
    for (const ds of [...known, ...unknown]) await writeLines(path.join(dir, 'spool', ds, 'a.ndjson'), linesOf(ds));
    const base = configFor(dir, emu, { admin: { listen: '127.0.0.1:0' } });
    const { agent } = await startAgent({ ...base, api: { ...base.api, token: 'append-only-token' } });
    for (const ds of known) await waitForRows(emu, dir, ds, linesOf(ds), `${ds} shipped`);
    const status = await waitFor(async () => {
      const s = (await (await fetch(`${agent.adminUrl}/status`)).json()) as StatusReport;
      return unknown.every((ds) => s.datasources.find((d) => d.datasource === ds)?.parked === 'datasource_rejected') ? s : null;
    }, 'the 9 unknown Data Sources parked');
    for (const ds of known) expect(status.datasources.find((d) => d.datasource === ds)?.parked).toBeNull();
    const ready = (await (await fetch(`${agent.adminUrl}/readyz`)).json()) as { ready: boolean; reasons: string[] };
    expect(ready).toEqual({ ready: false, reasons: ['datasource_rejected'] });
    const metrics = await (await fetch(`${agent.adminUrl}/metrics`)).text();
    expect(metrics).toContain('spoolship_parked{reason="datasource_rejected"} 1');
    expect(metrics).toContain('spoolship_parked{reason="token_rejected"} 0');
    for (const ds of unknown) expect(rows(emu, dir, ds)).toEqual([]);
  });

  it("a parked Data Source with more batches than the queue holds: the others still ship, and /readyz says its park, not no_progress as well", async () => {
    const dir = await tempDir();
    const clock = new JumpClock();
    const emu = await startEmu(dir, { datasources: ['ds_a'], appendTokens: ['append-only-token'], rps: 1000 });
    const a = (name: string, ...l: string[]) => writeLines(path.join(dir, 'spool', 'ds_a', name), l);
    await a('a.ndjson', '{"a":1}');
    // A queue of one batch: the parked batches beyond it wait in memory (as on a full state volume).
    const base = configFor(dir, emu, { admin: { listen: '127.0.0.1:0' }, batch: { max_bytes: 2000, linger_ms: 50 }, queue: { max_bytes: 2000 }, limits: { max_in_flight: 2 }, shutdown_timeout_ms: 500 });
    const tokenFile = path.join(dir, 'token');
    writeFileSync(tokenFile, 'append-only-token\n', { mode: 0o600 });
    // No periodic rescan: only the park's end may start the reading of new_0 again.
    const { agent, stop } = await startAgent({ ...base, api: { ...base.api, token: null, token_file: tokenFile } }, { clock, rescanMs: 3_600_000 });
    await waitForRows(emu, dir, 'ds_a', ['{"a":1}'], 'ds_a shipped');
    // 50 batches for a Data Source the token may not create.
    await writeLines(path.join(dir, 'spool', 'new_0', 'a.ndjson'), jsonLines('n', 0, 1000, 100));
    const readyz = async () => (await (await fetch(`${agent.adminUrl}/readyz`)).json()) as { ready: boolean; reasons: string[] };
    await waitFor(async () => (await readyz()).reasons.includes('datasource_rejected'), 'new_0 parked');
    // Its batches waiting for an answer move to the queue at once; each takes its room first, so queue.max_bytes holds.
    await waitFor(async () => (await gauge(agent, 'spoolship_queue_batches')) >= 1, 'new_0 queued');
    // More for new_0 while it is parked: its files wait in the spool, not in memory.
    const newFile = path.join(dir, 'spool', 'new_0', 'a.ndjson');
    const status = async () => (await (await fetch(`${agent.adminUrl}/status`)).json()) as StatusReport;
    const fileOf = (s: StatusReport) => s.datasources.find((d) => d.datasource === 'new_0')!.files[0]!;
    const readBefore = fileOf(await status()).read;
    await writeLines(newFile, jsonLines('n', 1000, 200, 100));
    const grown = statSync(newFile).size;
    await waitFor(async () => fileOf(await status()).size === grown, 'new_0 seen grown');
    await a('b.ndjson', '{"a":2}');
    await waitForRows(emu, dir, 'ds_a', ['{"a":1}', '{"a":2}'], 'ds_a shipped after new_0 parked');
    // Nothing leaves the queue while new_0 is parked (ds_a's batches never enter it): what it holds now is its peak.
    expect(await gauge(agent, 'spoolship_queue_bytes')).toBeLessThanOrEqual(2000);
    expect(fileOf(await status()).read, 'nothing more of new_0 read while it is parked').toBe(readBefore);
    // Far past STALL_LINGER_PERIODS linger periods since ds_a's last acknowledgement.
    clock.jump(30_000);
    expect(await readyz()).toEqual({ ready: false, reasons: ['datasource_rejected'] });
    // A line for ds_a that is not acknowledged is no progress again.
    emu.setFaults([{ kind: 'status', status: 503 }]);
    await a('c.ndjson', '{"a":3}');
    await waitFor(() => emu.stats().requests_by_status['503'] !== undefined, 'ds_a refused');
    clock.jump(10_000);
    expect((await readyz()).reasons).toEqual(['datasource_rejected', 'no_progress']);
    // A token that may create new_0 (SIGHUP): it unparks, its files are read again, and every line of both ships, once.
    emu.setFaults([]);
    writeFileSync(tokenFile, `${base.api.token}\n`);
    await agent.reloadToken();
    await waitForRows(emu, dir, 'new_0', jsonLines('n', 0, 1200, 100), 'every line of new_0 once unparked');
    await waitForRows(emu, dir, 'ds_a', ['{"a":1}', '{"a":2}', '{"a":3}'], 'every line of ds_a');
    await stop();
  });

  it.each([
    ['more batches than the pipeline holds', { queue: { max_bytes: 2000 }, limits: { max_in_flight: 2 } }],
    // The known Data Source's batches went to the queue behind the new one's, and the queue's probe was always the new one's.
    ['a queue that holds them all', { queue: { max_bytes: '100MB' } }],
    // The early probe went to the second new directory, and its 403 used it up.
    ['two new directories', { queue: { max_bytes: 2000 } }, ['aa_new', 'ab_new']],
    // The replayer waited on a refused batch while the early probe was away, and stayed there once it was offered again.
    ['three new directories and a queue that holds them all', { queue: { max_bytes: '100MB' }, batch: { max_bytes: 2000, linger_ms: 200 } }, ['aa_new', 'ab_new', 'ac_new'], 100],
  ])('a new directory read first, refused before any Data Source proved the token (%s): the others are still sent, one proves it, and the new one parks alone', async (_what, limits, news = ['aa_new'], known = 1) => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { datasources: ['zz_known'], appendTokens: ['append-only-token'], rps: 1000 });
    // Read first (its directory sorts first), and 50 batches: the budget parks on its 403.
    for (const ds of news) await writeLines(path.join(dir, 'spool', ds, 'a.ndjson'), jsonLines('n', 0, 1000, 100));
    const knownLines = Array.from({ length: known }, (_, i) => `{"k":${i + 1}}`);
    await writeLines(path.join(dir, 'spool', 'zz_known', 'a.ndjson'), knownLines);
    const base = configFor(dir, emu, { admin: { listen: '127.0.0.1:0' }, batch: { max_bytes: 2000, linger_ms: 50 }, shutdown_timeout_ms: 500, ...limits });
    const { agent, stop } = await startAgent({ ...base, api: { ...base.api, token: 'append-only-token' } }, { rescanMs: 3_600_000 });
    await waitForRows(emu, dir, 'zz_known', knownLines, 'zz_known shipped');
    await waitFor(async () => {
      const r = (await (await fetch(`${agent.adminUrl}/readyz`)).json()) as { reasons: string[] };
      return r.reasons.length === 1 && r.reasons[0] === 'datasource_rejected';
    }, 'aa_new parked alone');
    await stop();
    expect(rows(emu, dir, 'aa_new')).toEqual([]);
  });

  it('the disk queue holds a new directory\'s batches before a known one\'s: at the next start the known one\'s go first once the new one is refused, and prove the token', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { datasources: ['zz_known'], appendTokens: ['append-only-token'], rps: 1000 });
    const base = configFor(dir, emu, { admin: { listen: '127.0.0.1:0' }, batch: { max_bytes: 2000, linger_ms: 50 }, shutdown_timeout_ms: 500 });
    const config = { ...base, api: { ...base.api, token: 'append-only-token' } };
    const queued = async (agent: { adminUrl: string | null }, ds: string) =>
      ((await (await fetch(`${agent.adminUrl}/status`)).json()) as StatusReport).datasources.find((d) => d.datasource === ds)?.queue.batches ?? 0;
    // An outage: the new directory's batches are queued first, then the known one's.
    emu.setFaults([{ kind: 'status', status: 503 }]);
    await writeLines(path.join(dir, 'spool', 'aa_new', 'a.ndjson'), jsonLines('n', 0, 100, 100));
    const first = await startAgent(config);
    await waitFor(async () => (await queued(first.agent, 'aa_new')) >= 5, 'aa_new queued');
    await writeLines(path.join(dir, 'spool', 'zz_known', 'a.ndjson'), ['{"k":1}']);
    await waitFor(async () => (await queued(first.agent, 'zz_known')) >= 1, 'zz_known queued');
    await first.stop();
    emu.setFaults([]);
    const second = await startAgent(config, { rescanMs: 3_600_000 });
    await waitForRows(emu, dir, 'zz_known', ['{"k":1}'], 'zz_known shipped from the queue');
    await waitFor(async () => {
      const r = (await (await fetch(`${second.agent.adminUrl}/readyz`)).json()) as { reasons: string[] };
      return r.reasons.length === 1 && r.reasons[0] === 'datasource_rejected';
    }, 'aa_new parked alone');
    await second.stop();
    expect(rows(emu, dir, 'aa_new')).toEqual([]);
  });

  it("a parked Data Source's batches go to the disk queue while it has room: its file is read on to its end while parked, and all of it ships once unparked", async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { datasources: ['ds_a'], appendTokens: ['append-only-token'], rps: 1000 });
    await writeLines(path.join(dir, 'spool', 'ds_a', 'a.ndjson'), ['{"a":1}']);
    const base = configFor(dir, emu, { admin: { listen: '127.0.0.1:0' }, batch: { max_bytes: 20_000, linger_ms: 50 }, queue: { max_bytes: '100MB' }, limits: { max_in_flight: 2 }, shutdown_timeout_ms: 500 });
    const tokenFile = path.join(dir, 'token');
    writeFileSync(tokenFile, 'append-only-token\n', { mode: 0o600 });
    // No periodic rescan: only the end of a parked batch may start the reading again.
    const { agent, stop } = await startAgent({ ...base, api: { ...base.api, token: null, token_file: tokenFile } }, { rescanMs: 3_600_000 });
    await waitForRows(emu, dir, 'ds_a', ['{"a":1}'], 'ds_a shipped (the token is proven)');
    await writeLines(path.join(dir, 'spool', 'new_0', 'a.ndjson'), ['{"n":-1}']);
    const readyz = async () => ((await (await fetch(`${agent.adminUrl}/readyz`)).json()) as { reasons: string[] }).reasons;
    await waitFor(async () => (await readyz()).includes('datasource_rejected'), 'new_0 parked');
    // More than one read (1 MiB), moved in whole (one watch event): the reading pauses on the park with most of it unread.
    const lines = jsonLines('n', 0, 12_000, 100);
    await writeLines(path.join(dir, 'b.ndjson'), lines);
    const size = statSync(path.join(dir, 'b.ndjson')).size;
    renameSync(path.join(dir, 'b.ndjson'), path.join(dir, 'spool', 'new_0', 'b.ndjson'));
    const fileOf = async () => ((await (await fetch(`${agent.adminUrl}/status`)).json()) as StatusReport).datasources.find((d) => d.datasource === 'new_0')?.files.find((f) => f.path.endsWith('b.ndjson'));
    await waitFor(async () => (await fileOf())?.read === size, 'new_0 read to its end while parked');
    expect(await readyz()).toEqual(['datasource_rejected']);
    writeFileSync(tokenFile, `${base.api.token}\n`);
    await agent.reloadToken();
    await waitForRows(emu, dir, 'new_0', ['{"n":-1}', ...lines], 'every line of new_0 once unparked');
    await stop();
  });

  it('with a CREATE token, all 12 ship: creations past 5 a minute wait for the Retry-After of their 429, nothing parks', async () => {
    const dir = await tempDir();
    const known = ['ds_a', 'ds_b', 'ds_c'];
    const unknown = Array.from({ length: 9 }, (_, i) => `new_${i}`);
    // One clock for the emulator's per-minute window and the agent's waits: the test moves it past the minute.
    const clock = new JumpClock();
    const emu = await startEmu(dir, { datasources: known, rps: 1000, now: () => clock.now() });
    for (const ds of [...known, ...unknown]) await writeLines(path.join(dir, 'spool', ds, 'a.ndjson'), linesOf(ds));
    const { agent } = await startAgent(configFor(dir, emu, { admin: { listen: '127.0.0.1:0' } }), { clock });
    for (const ds of known) await waitForRows(emu, dir, ds, linesOf(ds), `${ds} shipped`);
    await waitFor(() => unknown.filter((ds) => rows(emu, dir, ds).length === 2).length === 5, 'five Data Sources created');
    await waitFor(() => (emu.stats().requests_by_status['429'] ?? 0) > 0, 'a creation past 5 a minute refused with 429');
    expect(unknown.filter((ds) => rows(emu, dir, ds).length > 0)).toHaveLength(5);
    // Waiting for the Retry-After is not a park.
    const during = (await (await fetch(`${agent.adminUrl}/readyz`)).json()) as { ready: boolean };
    expect(during.ready).toBe(true);
    // Past the minute. A 429 answered just before the jump but read by the
    // agent just after it counts its Retry-After from the new time: jump
    // again (every 2 s of real time) until every creation went through.
    clock.jump(61_000);
    const jumps = setInterval(() => clock.jump(61_000), 2000);
    try {
      for (const ds of unknown) await waitForRows(emu, dir, ds, linesOf(ds), `${ds} created and shipped`);
    } finally {
      clearInterval(jumps);
    }
    const status = (await (await fetch(`${agent.adminUrl}/status`)).json()) as StatusReport;
    expect(status.datasources.filter((d) => d.parked !== null)).toEqual([]);
    const metrics = await (await fetch(`${agent.adminUrl}/metrics`)).text();
    expect(metrics).toContain('spoolship_parked{reason="datasource_rejected"} 0');
    expect(metrics).toMatch(/spoolship_retries_total\{reason="429"\} [1-9]/);
  });
});
