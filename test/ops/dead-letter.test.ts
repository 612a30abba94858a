// `spoolship dead-letter list|replay` as a child process against the real
// emulator on port 0. Observable results only: rows the emulator stored,
// records left in the dead-letter files, exit codes, JSON fields.
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFor, rows, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines } from '../pipeline/helpers.js';
import { dlInput, runCli, startCli, writeConfig, writeDeadLetters } from './helpers.js';

const SPEC_FIELDS = ['datasource', 'reason', 'file', 'offset', 'bytes', 'at', 'status', 'line'];

/**
 * Records in a dead-letter file; a line the agent is writing at this instant
 * is skipped. A replay renames the file while it runs, so a file gone
 * between a look and the read counts as absent.
 */
function records(file: string): Array<Record<string, unknown>> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: Array<Record<string, unknown>> = [];
  for (const l of text.split('\n')) {
    try {
      if (l) out.push(JSON.parse(l) as Record<string, unknown>);
    } catch {
      // partial write in progress
    }
  }
  return out;
}

function jsonLinesOf(stdout: string): Array<Record<string, unknown>> {
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('dead-letter list', () => {
  it('prints the agent-written records with exactly the SPEC fields; filters combine', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { faults: [{ kind: 'reject_marker', marker: 'BAD' }] });
    const good = Array.from({ length: 20 }, (_, i) => JSON.stringify({ n: i }));
    const bad = ['{"n":"BAD-1"}', '{"n":"BAD-2"}'];
    // Both bad lines in one half of the batch: bad lines in both halves of a
    // first split make the agent park the Data Source (README "How each server answer is handled").
    await writeLines(path.join(dir, 'spool', 'app', 'a.ndjson'), [...good, ...bad]);
    const dlFile = path.join(dir, 'state', 'dead-letter', 'app.ndjson');
    const { stop } = await startAgent(configFor(dir, emu, { compression: { codec: 'none' } }));
    await waitForRows(emu, dir, 'app', good, 'the good rows');
    await waitFor(() => records(dlFile).length === 2, 'the two dead letters');
    await stop();
    await writeDeadLetters(path.join(dir, 'state'), 'other.ndjson', [dlInput('other', 'x'.repeat(10), { reason: 'invalid_json', status: null }), dlInput('other', '{"y":1}')]);
    const cfg = await writeConfig(dir, emu);

    const all = await runCli(['dead-letter', 'list', '-c', cfg, '--json'], dir);
    expect(all.code).toBe(0);
    const listed = jsonLinesOf(all.stdout);
    expect(listed).toHaveLength(4);
    const app = listed.filter((r) => r.datasource === 'app');
    expect(app.map((r) => r.line).sort()).toEqual(bad);
    for (const r of app) {
      expect(Object.keys(r)).toEqual(SPEC_FIELDS);
      expect(r).toMatchObject({ reason: 'rejected', status: 400, file: path.join(dir, 'spool', 'app', 'a.ndjson') });
      expect(r.bytes).toBe((r.line as string).length);
      expect(new Date(r.at as string).toISOString()).toBe(r.at);
      // The offset points at the line in the spool file.
      const text = readFileSync(r.file as string, 'utf8');
      expect(text.slice(r.offset as number, (r.offset as number) + (r.bytes as number))).toBe(r.line);
    }

    const byReason = jsonLinesOf((await runCli(['dead-letter', 'list', '-c', cfg, '--json', '--reason', 'rejected'], dir)).stdout);
    expect(byReason.map((r) => r.datasource).sort()).toEqual(['app', 'app', 'other']);
    const both = jsonLinesOf((await runCli(['dead-letter', 'list', '-c', cfg, '--json', '--reason', 'rejected', '--datasource', 'other'], dir)).stdout);
    expect(both).toEqual([expect.objectContaining({ datasource: 'other', line: '{"y":1}', reason: 'rejected' })]);

    const table = await runCli(['dead-letter', 'list', '-c', cfg], dir);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^AT\s+DATASOURCE\s+REASON\s+STATUS\s+FILE:OFFSET\s+BYTES\s+LINE/);
    expect(table.stdout).toContain('{"n":"BAD-1"}');
    expect(table.stdout).toMatch(/4 dead letters\n$/);
  });

  it('shows non-UTF-8 lines as line_base64 and previews control characters escaped and truncated', async () => {
    const dir = await tempDir();
    const state = path.join(dir, 'state');
    const binary = Buffer.from([0xff, 0xfe, 0x41]);
    await writeDeadLetters(state, 'bin.ndjson', [
      { ...dlInput('bin', ''), line: binary, bytes: 3, reason: 'invalid_json', status: null },
      dlInput('bin', `{"tab":"\t","long":"${'z'.repeat(100)}"}`),
    ]);
    const cfg = await writeConfig(dir, null);
    const json = jsonLinesOf((await runCli(['dead-letter', 'list', '-c', cfg, '--json'], dir)).stdout);
    expect(json[0]).toEqual({ datasource: 'bin', reason: 'invalid_json', file: '/spool/bin/a.ndjson', offset: 0, bytes: 3, at: '2026-01-02T03:04:05.000Z', status: null, line_base64: binary.toString('base64') });
    const table = (await runCli(['dead-letter', 'list', '-c', cfg], dir)).stdout;
    expect(table).toContain(`base64:${binary.toString('base64')}`);
    expect(table).toContain('{"tab":"\\t","long":"zzz');
    expect(table).toContain('…');
    expect(table).not.toContain('z'.repeat(100));
  });

  it('reads a record glued to a torn write, warns about the fragment, and rejects bad flags with exit 2', async () => {
    const dir = await tempDir();
    const state = path.join(dir, 'state');
    const file = await writeDeadLetters(state, 'app.ndjson', [dlInput('app', '{"a":1}')]);
    const { appendFile } = await import('node:fs/promises');
    await appendFile(file, '{"datasource":"app","reas'); // torn by a crash, no newline
    await writeDeadLetters(state, 'app.ndjson', [dlInput('app', '{"a":2}')]);
    const cfg = await writeConfig(dir, null);
    const r = await runCli(['dead-letter', 'list', '-c', cfg, '--json'], dir);
    expect(r.code).toBe(0);
    expect(jsonLinesOf(r.stdout).map((x) => x.line)).toEqual(['{"a":1}', '{"a":2}']);
    expect(r.stderr).toMatch(/1 unreadable line/);
    expect((await runCli(['dead-letter', 'list', '-c', cfg, '--reason', 'nope'], dir)).code).toBe(2);
    expect((await runCli(['dead-letter', 'frobnicate', '-c', cfg], dir)).code).toBe(2);
  });
});

describe('dead-letter replay', () => {
  it('a line rejected again stays with the new answer (exit 1); after the cause is fixed it is delivered and removed (exit 0)', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { faults: [{ kind: 'reject_marker', marker: 'BAD' }] });
    const state = path.join(dir, 'state');
    const lines = ['{"k":"ok-1"}', '{"k":"BAD-1"}', '{"k":"ok-2"}', '{"k":"ok-3"}', '{"k":"BAD-2"}'];
    const file = await writeDeadLetters(state, 'app.ndjson', lines.map((l, i) => dlInput('app', l, { offset: i * 100 })));
    const cfg = await writeConfig(dir, emu, { compression: { codec: 'gzip' } });

    const first = await runCli(['dead-letter', 'replay', '-c', cfg, '--json'], dir);
    expect(first.code).toBe(1);
    expect(JSON.parse(first.stdout)).toEqual({ selected: 5, acknowledged: 3, rejected: 2, not_sent: 0, skipped_truncated: 0, remaining: 2, stopped: null });
    expect(rows(emu, dir, 'app').sort()).toEqual(['{"k":"ok-1"}', '{"k":"ok-2"}', '{"k":"ok-3"}']);
    const kept = records(file);
    expect(kept.map((r) => r.line)).toEqual(['{"k":"BAD-1"}', '{"k":"BAD-2"}']);
    for (const r of kept) {
      // On disk: SPEC's fields, then the format version and the record's CRC.
      expect(Object.keys(r)).toEqual([...SPEC_FIELDS, 'v', 'crc32']);
      expect(r.status).toBe(400);
      expect(r.reason).toBe('rejected');
      expect(r.at).not.toBe('2026-01-02T03:04:05.000Z'); // the new answer's time
    }
    expect(kept.map((r) => r.offset)).toEqual([100, 400]); // where the lines came from is kept
    expect(await readdir(path.join(state, 'dead-letter'))).toEqual(['app.ndjson']); // no temp file, lock released

    emu.setFaults([]);
    const second = await runCli(['dead-letter', 'replay', '-c', cfg], dir);
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/acknowledged \(removed\): 2/);
    expect(second.stdout).toMatch(/remaining in the dead-letter store for this selection: 0/);
    expect(rows(emu, dir, 'app').sort()).toEqual([...lines].sort());
    expect(records(file)).toEqual([]);
  });

  it('bisects a batch so one bad line does not block the rest, in requests of at most batch.max_bytes', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { faults: [{ kind: 'reject_marker', marker: 'POISON' }] });
    const state = path.join(dir, 'state');
    const lines = Array.from({ length: 200 }, (_, i) => JSON.stringify({ i, v: i === 137 ? 'POISON' : 'x'.repeat(40) }));
    const file = await writeDeadLetters(state, 'app.ndjson', lines.map((l) => dlInput('app', l)));
    const cfg = await writeConfig(dir, emu, { batch: { max_bytes: 4000 }, compression: { codec: 'none' } });
    const r = await runCli(['dead-letter', 'replay', '-c', cfg, '--json'], dir);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ selected: 200, acknowledged: 199, rejected: 1, remaining: 1 });
    expect(rows(emu, dir, 'app')).toHaveLength(199);
    expect(records(file).map((x) => x.line)).toEqual([lines[137]]);
    const reqs = emu.requests();
    for (const q of reqs) expect(q.decodedBytes!).toBeLessThanOrEqual(4000);
    // 200 lines of ~60 bytes in 4000-byte requests: a few batches plus O(log n) probes for the bad one.
    expect(reqs.length).toBeLessThan(20);
  });

  it('every line rejected (the Data Source itself is refused): the request-level rule of the sender stops the replay with bad_request, every record kept', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { faults: [{ kind: 'reject_marker', marker: '"k"' }] });
    const state = path.join(dir, 'state');
    const lines = Array.from({ length: 40 }, (_, i) => JSON.stringify({ k: i }));
    const file = await writeDeadLetters(state, 'app.ndjson', lines.map((l) => dlInput('app', l)));
    const before = readFileSync(file, 'utf8');
    const cfg = await writeConfig(dir, emu, { compression: { codec: 'none' } });
    const r = await runCli(['dead-letter', 'replay', '-c', cfg, '--json'], dir);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ selected: 40, acknowledged: 0, rejected: 0, stopped: 'bad_request', remaining: 40 });
    expect(readFileSync(file, 'utf8')).toBe(before);
    // Decided by the sender's 3-quarters rule in O(log n) probes, not by splitting down to every line.
    expect(emu.requests().length).toBeLessThan(20);
  });

  it('filters: only the selected records are sent and removed; the rest stay byte for byte', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const state = path.join(dir, 'state');
    const appFile = await writeDeadLetters(state, 'app.ndjson', [
      dlInput('app', '{"r":"rejected"}'),
      dlInput('app', '{"r":"mv"}', { reason: 'materialized_view_error', status: 422 }),
    ]);
    const otherFile = await writeDeadLetters(state, 'other.ndjson', [dlInput('other', '{"r":"other"}')]);
    const otherBefore = readFileSync(otherFile, 'utf8');
    const cfg = await writeConfig(dir, emu);
    const r = await runCli(['dead-letter', 'replay', '-c', cfg, '--datasource', 'app', '--reason', 'materialized_view_error', '--json'], dir);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ selected: 1, acknowledged: 1, remaining: 0 });
    expect(rows(emu, dir, 'app')).toEqual(['{"r":"mv"}']);
    expect(rows(emu, dir, 'other')).toEqual([]);
    expect(records(appFile).map((x) => x.line)).toEqual(['{"r":"rejected"}']);
    expect(readFileSync(otherFile, 'utf8')).toBe(otherBefore);
  });

  it('token rejected or wrong host: stops at once, keeps every record unchanged, exit 1 with a clear message', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const state = path.join(dir, 'state');
    const file = await writeDeadLetters(state, 'app.ndjson', Array.from({ length: 50 }, (_, i) => dlInput('app', JSON.stringify({ i, pad: 'p'.repeat(90) }))));
    const before = readFileSync(file, 'utf8');
    const badToken = await writeConfig(dir, emu, { api: { token: 'wrong-token' }, batch: { max_bytes: 1000 }, limits: { max_in_flight: 2 } });
    const r = await runCli(['dead-letter', 'replay', '-c', badToken, '--json'], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/rejected the token \(401\/403\).*api\.token/);
    expect(JSON.parse(r.stdout)).toMatchObject({ selected: 50, acknowledged: 0, stopped: 'token_rejected', remaining: 50 });
    expect(readFileSync(file, 'utf8')).toBe(before);
    expect(rows(emu, dir, 'app')).toEqual([]);
    // Stopped at once: not one request per batch.
    expect(emu.requests().length).toBeLessThanOrEqual(2);

    const foreign = await writeConfig(dir, emu, { api: { token: emu.foreignToken } });
    const f = await runCli(['dead-letter', 'replay', '-c', foreign], dir);
    expect(f.code).toBe(1);
    expect(f.stderr).toMatch(/404.*api\.base_url/);
    expect(readFileSync(file, 'utf8')).toBe(before);
  });

  it("refuses api.base_url 'embedded' with exit 2 and touches nothing", async () => {
    const dir = await tempDir();
    const file = await writeDeadLetters(path.join(dir, 'state'), 'app.ndjson', [dlInput('app', '{"a":1}')]);
    const before = readFileSync(file, 'utf8');
    const cfg = await writeConfig(dir, null, { api: { base_url: 'embedded' } });
    const r = await runCli(['dead-letter', 'replay', '-c', cfg], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/embedded emulator lives inside a running agent/);
    expect(readFileSync(file, 'utf8')).toBe(before);
  });

  it('picks up the file a crashed replay left behind: listed, then replayed with the live file; nothing lost', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const state = path.join(dir, 'state');
    // The crashed replay had taken these away (step 1) and died before putting anything back.
    const leftover = await writeDeadLetters(state, 'app.ndjson.replaying', [dlInput('app', '{"from":"leftover-1"}'), dlInput('app', '{"from":"leftover-2"}')]);
    // Since then the agent wrote new dead letters to a fresh live file.
    const live = await writeDeadLetters(state, 'app.ndjson', [dlInput('app', '{"from":"live"}')]);
    const cfg = await writeConfig(dir, emu);
    const listed = await runCli(['dead-letter', 'list', '-c', cfg, '--json'], dir);
    expect(jsonLinesOf(listed.stdout).map((r) => r.line).sort()).toEqual(['{"from":"leftover-1"}', '{"from":"leftover-2"}', '{"from":"live"}']);
    expect(listed.stderr).toMatch(/interrupted replay/);
    const r = await runCli(['dead-letter', 'replay', '-c', cfg, '--json'], dir);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ selected: 3, acknowledged: 3, remaining: 0 });
    expect(rows(emu, dir, 'app').sort()).toEqual(['{"from":"leftover-1"}', '{"from":"leftover-2"}', '{"from":"live"}']);
    expect(existsSync(leftover)).toBe(false);
    expect(records(live)).toEqual([]);
  });

  it("a leftover's record rejected again goes back to the live file and is not sent again by the same run, nor counted twice", async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { faults: [{ kind: 'reject_marker', marker: 'BAD' }] });
    const state = path.join(dir, 'state');
    await writeDeadLetters(state, 'app.ndjson.replaying', [dlInput('app', '{"from":"leftover","v":"BAD"}')]);
    const live = await writeDeadLetters(state, 'app.ndjson', [dlInput('app', '{"from":"live"}')]);
    const cfg = await writeConfig(dir, emu);
    const r = await runCli(['dead-letter', 'replay', '-c', cfg, '--json'], dir);
    expect(r.code).toBe(1);
    // An audit saw selected 2, rejected 2 and two 400s for one record.
    expect(JSON.parse(r.stdout)).toMatchObject({ selected: 2, acknowledged: 1, rejected: 1, not_sent: 0, remaining: 1, stopped: null });
    expect(emu.stats().requests_by_status['400']).toBe(1);
    expect(rows(emu, dir, 'app')).toEqual(['{"from":"live"}']);
    expect(records(live).map((x) => x.line)).toEqual(['{"from":"leftover","v":"BAD"}']);
    // The next run sends it once again.
    expect(JSON.parse((await runCli(['dead-letter', 'replay', '-c', cfg, '--json'], dir)).stdout)).toMatchObject({ selected: 1, rejected: 1, remaining: 1 });
    expect(emu.stats().requests_by_status['400']).toBe(2);
  });

  it.each(['SIGINT', 'SIGTERM'] as const)('%s stops a replay and keeps every record byte for byte; a second replay meanwhile is refused', async (signal) => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { faults: [{ kind: 'hang', every: 1 }] });
    const state = path.join(dir, 'state');
    const file = await writeDeadLetters(state, 'app.ndjson', [dlInput('app', '{"a":1}'), dlInput('app', '{"a":2}')]);
    const before = readFileSync(file, 'utf8');
    // The hanging request is cut shutdown_timeout_ms after the signal, not at its own timeout (a service manager's grace would end first).
    const cfg = await writeConfig(dir, emu, { api: { timeout_ms: 600_000 }, shutdown_timeout_ms: 200 });
    const first = startCli(['dead-letter', 'replay', '-c', cfg, '--json'], dir);
    // Step 1 done and the request is hanging: the file was taken away.
    await waitFor(() => existsSync(`${file}.replaying`) && !existsSync(file), 'the taken file');
    const second = await runCli(['dead-letter', 'replay', '-c', cfg], dir);
    expect(second.code).toBe(2);
    expect(second.stderr).toContain(`another dead-letter replay (pid ${first.child.pid})`);
    // SIGTERM too (systemd, Kubernetes, timeout(1)): it left the taken file and the lock behind.
    first.child.kill(signal);
    const r = await first.done;
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ selected: 2, acknowledged: 0, not_sent: 2, remaining: 2, stopped: 'interrupted' });
    expect(readFileSync(file, 'utf8')).toBe(before);
    expect(await readdir(path.join(state, 'dead-letter'))).toEqual(['app.ndjson']);
  });

  it('SIGTERM once every record is on the wire: answered within shutdown_timeout_ms, all acknowledged, nothing left: exit 0', async () => {
    const dir = await tempDir();
    let arrived!: () => void;
    const arrival = new Promise<void>((resolve) => (arrived = resolve));
    const emu = await startEmu(dir, { faults: [{ kind: 'slow', delay_ms: 1000 }], onEventsArrival: () => arrived() });
    const state = path.join(dir, 'state');
    await writeDeadLetters(state, 'app.ndjson', [dlInput('app', '{"a":1}'), dlInput('app', '{"a":2}')]);
    const cfg = await writeConfig(dir, emu, { shutdown_timeout_ms: 30_000 });
    const replay = startCli(['dead-letter', 'replay', '-c', cfg, '--json'], dir);
    await arrival;
    replay.child.kill('SIGTERM');
    const r = await replay.done;
    expect(JSON.parse(r.stdout)).toMatchObject({ selected: 2, acknowledged: 2, remaining: 0, stopped: 'interrupted' });
    expect(r.code).toBe(0);
    expect(rows(emu, dir, 'app')).toEqual(['{"a":1}', '{"a":2}']);
  });

  it('a retry names its cause (the status, or the network error), as send does', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { faults: [{ kind: 'status', status: 503 }] });
    const state = path.join(dir, 'state');
    await writeDeadLetters(state, 'app.ndjson', [dlInput('app', '{"a":1}')]);
    const cfg = await writeConfig(dir, emu);
    const replay = startCli(['dead-letter', 'replay', '-c', cfg], dir);
    await waitFor(() => replay.stderr().includes('retrying ('), 'the retry');
    expect(replay.stderr()).toContain('retrying (5xx: HTTP 503) for Data Source app');
    replay.child.kill('SIGINT');
    expect((await replay.done).code).toBe(1);
  });

  it('a replay killed with kill -9 mid-way: the next one resends at most the window under way, not the lines acknowledged before', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const state = path.join(dir, 'state');
    const lines = Array.from({ length: 30 }, (_, i) => JSON.stringify({ n: i, pad: 'x'.repeat(950) }));
    await writeDeadLetters(state, 'app.ndjson', lines.map((l) => dlInput('app', l)));
    // One record per batch (a line of ~970 bytes, its record over 1 KB) and one batch at a time: a window is one record.
    const cfg = await writeConfig(dir, emu, { batch: { max_bytes: 1000 }, limits: { max_in_flight: 1 } });
    const first = startCli(['dead-letter', 'replay', '-c', cfg], dir);
    await waitFor(() => rows(emu, dir, 'app').length >= 10, 'ten lines replayed');
    first.child.kill('SIGKILL');
    await first.done;
    const before = rows(emu, dir, 'app').length;
    const r = await runCli(['dead-letter', 'replay', '-c', cfg, '--json'], dir);
    expect(r.code).toBe(0);
    const stored = rows(emu, dir, 'app');
    expect(new Set(stored)).toEqual(new Set(lines));
    // Sent twice: at most the window under way at the kill (one record here).
    expect({ before, duplicates: stored.length - lines.length }).toEqual({ before, duplicates: expect.toBeOneOf([0, 1]) });
    expect(JSON.parse(r.stdout)).toMatchObject({ remaining: 0 });
    expect(await readdir(path.join(state, 'dead-letter'))).toEqual([]);
  });

  it('replays a record glued to a torn write and keeps the fragment', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const state = path.join(dir, 'state');
    const file = path.join(state, 'dead-letter', 'app.ndjson');
    await writeDeadLetters(state, 'app.ndjson', []);
    const { appendFile } = await import('node:fs/promises');
    await appendFile(file, '{"datasource":"app","reas');
    await writeDeadLetters(state, 'app.ndjson', [dlInput('app', '{"glued":1}')]);
    const r = await runCli(['dead-letter', 'replay', '-c', await writeConfig(dir, emu), '--json'], dir);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ selected: 1, acknowledged: 1, remaining: 0 });
    expect(rows(emu, dir, 'app')).toEqual(['{"glued":1}']);
    expect(readFileSync(file, 'utf8')).toBe('{"datasource":"app","reas\n');
  });

  it('keeps records stored truncated (line_too_long) instead of sending part of a line, says they can never be replayed, exits 0', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const state = path.join(dir, 'state');
    const file = await writeDeadLetters(state, 'app.ndjson', [dlInput('app', '{"head":"only', { reason: 'line_too_long', bytes: 5_000_000, status: null })]);
    const before = readFileSync(file, 'utf8');
    const cfg = await writeConfig(dir, emu);
    const r = await runCli(['dead-letter', 'replay', '-c', cfg, '--json'], dir);
    // Said plainly, and not a failure of every replay to come.
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('1 record(s) can never be replayed');
    expect(r.stderr).toContain('dead-letter purge --reason line_too_long');
    expect(JSON.parse(r.stdout)).toMatchObject({ selected: 1, acknowledged: 0, skipped_truncated: 1, remaining: 1 });
    expect(emu.requests()).toEqual([]);
    expect(readFileSync(file, 'utf8')).toBe(before);
  });

  it('is safe while the agent runs and keeps dead-lettering: replayed lines delivered once, every new dead letter kept', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { faults: [{ kind: 'reject_marker', marker: 'NEW' }] });
    const state = path.join(dir, 'state');
    const spoolFile = path.join(dir, 'spool', 'app', 'a.ndjson');
    const dlFile = path.join(state, 'dead-letter', 'app.ndjson');
    const { stop } = await startAgent(configFor(dir, emu, { compression: { codec: 'none' } }));
    // Dead letters from an earlier problem, now fixed; the replay is paced
    // (10 requests/s, one at a time) so it overlaps the agent's writes below.
    const old = Array.from({ length: 300 }, (_, i) => JSON.stringify({ old: i, pad: 'o'.repeat(80) }));
    await writeDeadLetters(state, 'app.ndjson', old.map((l) => dlInput('app', l)));
    const cfg = await writeConfig(dir, emu, { compression: { codec: 'none' }, batch: { max_bytes: 1000 }, limits: { requests_per_second: 10, max_in_flight: 1 } });
    const replay = startCli(['dead-letter', 'replay', '-c', cfg, '--json'], dir);
    // Meanwhile the agent dead-letters NEW lines. Each goes in its own batch
    // with good lines in the other half (bad lines in both halves of a
    // batch park the Data Source, README "How each server answer is handled").
    const fresh: string[] = [];
    for (let i = 0; i < 10; i++) {
      const line = JSON.stringify({ fresh: i, tag: 'NEW' });
      fresh.push(line);
      await writeLines(spoolFile, [`{"g":"${i}-1"}`, `{"g":"${i}-2"}`, `{"g":"${i}-3"}`, line]);
      await waitFor(() => allLines(dlFile).includes(line), `dead letter ${i} stored`);
    }
    const r = await replay.done;
    await stop();
    expect([0, 1]).toContain(r.code); // 1 when it also picked up NEW lines (rejected again, kept)
    const oldRows = rows(emu, dir, 'app').filter((l) => l.includes('"old"'));
    expect(oldRows.sort()).toEqual([...old].sort());
    const left = records(dlFile).map((x) => x.line as string);
    expect(left.filter((l) => l.includes('"old"'))).toEqual([]);
    expect([...new Set(left)].sort()).toEqual([...fresh].sort());
    expect(await readdir(path.join(state, 'dead-letter'))).toEqual(['app.ndjson']);
  });
});

/** Lines of the live dead-letter file and of a replay's taken file. */
function allLines(dlFile: string): string[] {
  return [...records(dlFile), ...records(`${dlFile}.replaying`)].map((x) => x.line as string);
}

describe('dead-letter purge', () => {
  it('removes the selected records for good (--yes), keeps the others, and refuses to run unasked without --yes', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const state = path.join(dir, 'state');
    await writeDeadLetters(state, 'app.ndjson', [dlInput('app', '{"a":1}'), dlInput('app', 'not json', { reason: 'invalid_json', status: null }), dlInput('app', '{"a":2}')]);
    await writeDeadLetters(state, 'web.ndjson', [dlInput('web', '{"w":1}')]);
    const cfg = await writeConfig(dir, emu);
    const unasked = await runCli(['dead-letter', 'purge', '-c', cfg, '--reason', 'rejected'], dir);
    expect(unasked.code).toBe(2);
    expect(unasked.stderr).toContain('--yes');
    expect(jsonLinesOf((await runCli(['dead-letter', 'list', '-c', cfg, '--json'], dir)).stdout)).toHaveLength(4);

    const r = await runCli(['dead-letter', 'purge', '-c', cfg, '--datasource', 'app', '--reason', 'rejected', '--yes', '--json'], dir);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ removed: 2 });
    const left = jsonLinesOf((await runCli(['dead-letter', 'list', '-c', cfg, '--json'], dir)).stdout);
    expect(left.map((x) => `${x.datasource}:${x.line}`).sort()).toEqual(['app:not json', 'web:{"w":1}']);
    expect((await readdir(path.join(state, 'dead-letter'))).sort()).toEqual(['app.ndjson', 'web.ndjson']);
  });
});

describe('a damaged dead-letter record', () => {
  it('is unreadable (a warning naming the file in list, replay and purge), never listed, replayed nor purged; the others are', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const state = path.join(dir, 'state');
    const file = await writeDeadLetters(state, 'app.ndjson', [dlInput('app', '{"a":1}'), dlInput('app', '{"a":2}')]);
    // A flipped byte inside the first record's line.
    const text = readFileSync(file, 'utf8');
    writeFileSync(file, text.replace('{\\"a\\":1}', '{\\"a\\":7}'));
    const cfg = await writeConfig(dir, emu);
    const list = await runCli(['dead-letter', 'list', '-c', cfg, '--json'], dir);
    expect(list.code).toBe(0);
    expect(jsonLinesOf(list.stdout).map((r) => r.line)).toEqual(['{"a":2}']);
    const warning = `spoolship dead-letter: warning: ${file}: 1 unreadable line(s) (damaged: a CRC that does not match, or a write torn by a crash); kept, never listed, replayed nor purged`;
    expect(list.stderr).toContain(warning);
    const replay = await runCli(['dead-letter', 'replay', '-c', cfg, '--json'], dir);
    expect(JSON.parse(replay.stdout)).toMatchObject({ selected: 1, acknowledged: 1 });
    expect(replay.stderr).toContain(warning);
    expect(rows(emu, dir, 'app')).toEqual(['{"a":2}']);
    const purge = await runCli(['dead-letter', 'purge', '--yes', '-c', cfg, '--json'], dir);
    expect(JSON.parse(purge.stdout)).toEqual({ removed: 0 });
    expect(purge.stderr).toContain(warning);
    expect(readFileSync(file, 'utf8')).toContain('{\\"a\\":7}');
  });
});

describe('dead-letter purge and replay tell the running agent', () => {
  it('a store that was full takes dead letters again at once after a purge (the agent counts it again)', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const config = configFor(dir, emu, { validate: 'json', dead_letter: { max_bytes: '2KB' }, log: { level: 'silent' } });
    const { agent } = await startAgent(config);
    const dropped = async () => (await agent.metrics.registry.getSingleMetric('spoolship_dead_letter_dropped_total')!.get()).values.reduce((n, v) => n + v.value, 0);
    const spoolFile = path.join(dir, 'spool', 'app', 'a.ndjson');
    await writeLines(spoolFile, Array.from({ length: 30 }, (_, i) => `not json ${i} ${'x'.repeat(60)}`));
    await waitFor(async () => (await dropped()) > 0, 'the store is full: lines dropped');
    const cfg = await writeConfig(dir, emu, { dead_letter: { max_bytes: '2KB' } });
    await waitFor(async () => {
      const listed = await runCli(['dead-letter', 'list', '-c', cfg, '--json'], dir);
      return listed.stdout.trim().split('\n').length + (await dropped()) === 30;
    }, 'every line stored or dropped');
    const droppedBefore = await dropped();

    const purged = await runCli(['dead-letter', 'purge', '--yes', '-c', cfg, '--json'], dir);
    expect(purged.code, purged.stderr).toBe(0);
    expect(purged.stderr).toBe('');
    expect(JSON.parse(purged.stdout).removed).toBe(30 - droppedBefore);

    // Each as long as any record before: none would fit the room a full store has left.
    appendFileSync(spoolFile, `still not json A ${'x'.repeat(60)}\nstill not json B ${'x'.repeat(60)}\n`);
    await waitFor(async () => (await runCli(['dead-letter', 'list', '-c', cfg, '--json'], dir)).stdout.trim().split('\n').filter(Boolean).length === 2, 'the new dead letters are stored');
    expect(await dropped()).toBe(droppedBefore);
  });
});
