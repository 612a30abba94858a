import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEAD_LETTER_REASONS } from '../../src/deadletter/files.js';
import { SPACING_MARGIN } from '../../src/sender/limiter.js';
import { REQUEST_STATUSES } from '../../src/metrics/metrics.js';
import { busiestWindow } from '../fleet/helpers.js';
import { configFor, expectExactlyOnce, jsonLines, rows, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines } from './helpers.js';

function metricValues(text: string, name: string): Array<{ labels: Record<string, string>; value: number }> {
  const out: Array<{ labels: Record<string, string>; value: number }> = [];
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`).exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const kv of (m[1] ?? '').split(',').filter(Boolean)) {
      const [k, v] = kv.split('=');
      labels[k!] = JSON.parse(v!) as string;
    }
    out.push({ labels, value: Number(m[2]) });
  }
  return out;
}

describe('limits and metrics', () => {
  // The limiter's decisions are tested on a manual clock
  // (test/sender/limiter.test.ts: starts at least 1000 / rps x SPACING_MARGIN
  // apart, so at most 100 in any 1.05 s). Here, against the emulator's own
  // sliding-window record: arrival jitter (this test's emulator shares the
  // agent's event loop on a loaded machine) is what the margin is for, so the
  // emulator's window allows the limit plus that margin, and refuses nothing.
  it('offered 3x the limit, the emulator (limit plus the agent margin) refuses nothing and no sliding second passes it', async () => {
    const dir = await tempDir();
    const withMargin = Math.floor(100 * SPACING_MARGIN);
    const emu = await startEmu(dir, { dataDir: null, rps: withMargin });
    // ~1 KB batches of 50-byte lines: 20,000 lines offer ~1,000 requests, far more than 3 s x 100.
    const config = configFor(dir, emu, { batch: { max_bytes: 1000, linger_ms: 1000 }, limits: { requests_per_second: 100 } });
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), jsonLines('r', 0, 20_000));
    const { stop } = await startAgent(config);
    await waitFor(() => emu.requests().length >= 350, '350 requests', 20_000);
    await stop();
    const at = emu.requests().map((r) => r.at);
    expect(busiestWindow(at)).toBeLessThanOrEqual(withMargin);
    expect(emu.stats().requests_by_status['429'] ?? 0).toBe(0);
  });

  it('/metrics counters equal what the emulator saw: requests by status, lines acknowledged, retries and dead letters by reason', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    emu.setFaults([
      { kind: 'status', status: 503, every: 4 },
      { kind: 'reject_marker', marker: 'POISON' },
    ]);
    emu.failNext(2, { kind: 'status', status: 429, retry_after: 0 });
    const good = jsonLines('m', 0, 3000);
    const lines = [...good.slice(0, 1000), '{"id":"POISON-1"}', ...good.slice(1000, 2000), '{"id":"POISON-2"}', ...good.slice(2000)];
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    const config = configFor(dir, emu, { batch: { max_bytes: 20_000 }, admin: { listen: '127.0.0.1:0' } });
    const { agent, stop } = await startAgent(config);
    await waitForRows(emu, dir, 'ev', good, 'all good rows');
    await waitFor(async () => {
      const t = await (await fetch(`${agent.adminUrl}/metrics`)).text();
      return metricValues(t, 'spoolship_lines_dead_lettered_total').reduce((a, m) => a + m.value, 0) === 2;
    }, 'dead letters counted');
    const text = await (await fetch(`${agent.adminUrl}/metrics`)).text();
    await stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), good);
    const emuStatus = emu.stats().requests_by_status;
    const byStatus: Record<string, number> = {};
    // Every status of the answer table has its series at 0 from the start; those answered count.
    for (const m of metricValues(text, 'spoolship_requests_total')) if (m.value > 0) byStatus[m.labels.status!] = (byStatus[m.labels.status!] ?? 0) + m.value;
    expect(metricValues(text, 'spoolship_requests_total').filter((m) => m.labels.datasource === 'ev').map((m) => m.labels.status).sort()).toEqual([...REQUEST_STATUSES].sort());
    expect(byStatus).toEqual(emuStatus);
    const acked = metricValues(text, 'spoolship_lines_acked_total').find((m) => m.labels.datasource === 'ev')?.value;
    expect(acked).toBe(3000);
    const retries = Object.fromEntries(metricValues(text, 'spoolship_retries_total').map((m) => [m.labels.reason, m.value]));
    expect(retries['5xx']).toBe(emuStatus['503']);
    expect(retries['429']).toBe(2);
    // Every 400 either split a part (a retry) or isolated a line (a dead letter).
    expect((retries['400'] ?? 0) + 2).toBe(emuStatus['400']);
    const dead = metricValues(text, 'spoolship_lines_dead_lettered_total');
    // Every reason has its series from the start, at 0 (docs/metrics.md); only `rejected` counted.
    expect(Object.fromEntries(dead.map((m) => [`${m.labels.datasource}/${m.labels.reason}`, m.value]))).toEqual(
      Object.fromEntries(DEAD_LETTER_REASONS.map((r) => [`ev/${r}`, r === 'rejected' ? 2 : 0])),
    );
  });

  it('spoolship_behind_bytes: the whole file while its batch is in flight, 0 once acknowledged', async () => {
    const dir = await tempDir();
    // Each answer takes 1.5 s: the batch is read, in flight, not yet committed.
    const emu = await startEmu(dir, { faults: [{ kind: 'slow', delay_ms: 1500 }] });
    const lines = jsonLines('b', 0, 300);
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    const { agent, stop } = await startAgent(configFor(dir, emu, { admin: { listen: '127.0.0.1:0' } }));
    const behind = async () => {
      const t = await (await fetch(`${agent.adminUrl}/metrics`)).text();
      return metricValues(t, 'spoolship_behind_bytes').find((m) => m.labels.datasource === 'ev')?.value;
    };
    const size = Buffer.byteLength(`${lines.join('\n')}\n`);
    await waitFor(async () => (await behind()) === size, `${size} bytes behind while in flight`);
    await waitForRows(emu, dir, 'ev', lines, 'rows');
    await waitFor(async () => (await behind()) === 0, 'nothing behind once acknowledged');
    await stop();
  });

  it('/readyz flips to 503 on a 403 and back to 200 once the token file is fixed, with no restart and no signal', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const tokenFile = path.join(dir, 'token');
    await writeFile(tokenFile, 'wrong-token\n');
    const config = configFor(dir, emu, { api: { token: null, token_file: tokenFile }, admin: { listen: '127.0.0.1:0' } });
    const lines = jsonLines('t', 0, 500);
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    const { agent, stop } = await startAgent(config);
    const readyz = async () => {
      const r = await fetch(`${agent.adminUrl}/readyz`);
      return { status: r.status, body: (await r.json()) as { ready: boolean; reasons: string[] } };
    };
    const down = await waitFor(async () => {
      const r = await readyz();
      return r.status === 503 ? r : null;
    }, '/readyz 503');
    expect(down.body).toEqual({ ready: false, reasons: ['token_rejected'] });
    await writeFile(tokenFile, `${emu.token}\n`);
    await waitFor(async () => (await readyz()).status === 200, '/readyz 200 again', 20_000);
    await waitForRows(emu, dir, 'ev', lines, 'rows after the fix');
    await stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), lines);
  });

  it('HTTP/2 over TLS: a GOAWAY reconnects at once and resends; every line arrives', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { tls: true, faults: [{ kind: 'goaway', every: 3 }] });
    const config = configFor(dir, emu, { api: { http2: true, ca_file: emu.caFile }, batch: { max_bytes: 10_000 }, admin: { listen: '127.0.0.1:0' } });
    const lines = jsonLines('h', 0, 2000);
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    const { agent, stop } = await startAgent(config);
    await waitForRows(emu, dir, 'ev', lines, 'every line', { duplicates: 'allow' });
    const text = await (await fetch(`${agent.adminUrl}/metrics`)).text();
    await stop();
    const reqs = emu.requests();
    expect(reqs.every((r) => r.httpVersion === '2')).toBe(true);
    const goaways = reqs.filter((r) => r.outcome === 'goaway');
    expect(goaways.length).toBeGreaterThan(0);
    expect(metricValues(text, 'spoolship_retries_total').find((m) => m.labels.reason === 'goaway')?.value).toBeGreaterThan(0);
    // A GOAWAY after insert is an unknown outcome: those batches may arrive twice, nothing else.
    const got = rows(emu, dir, 'ev');
    expect(new Set(got)).toEqual(new Set(lines));
    expect(got.length - lines.length).toBeLessThanOrEqual(goaways.reduce((a, r) => a + Math.ceil((r.decodedBytes ?? 0) / 20), 0));
  });
});

describe('batch growth under the rate limit', () => {
  it('when the rate limit binds, batches grow toward max_bytes instead of queueing more small requests', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const config = configFor(dir, emu, {
      batch: { max_bytes: 40_000, linger_ms: 20 },
      limits: { requests_per_second: 4, max_in_flight: 1 },
      compression: { codec: 'none' },
    });
    const file = path.join(dir, 'spool', 'ev', 'a.ndjson');
    await writeLines(file, []);
    const { stop } = await startAgent(config);
    // ~1 KB every 10 ms for 1.5 s (longer on a loaded machine): a
    // linger-sized batch would be ~2 KB.
    const expected: string[] = [];
    const writeStart = Date.now();
    for (let i = 0; i < 150; i++) {
      const lines = jsonLines(`g${i}`, 0, 10, 60);
      expected.push(...lines);
      await writeLines(file, lines);
      await new Promise((r) => setTimeout(r, 10));
    }
    const writeMs = Date.now() - writeStart;
    await waitForRows(emu, dir, 'ev', expected, 'all rows', { timeoutMs: 30_000 });
    await stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), expected);
    const sizes = emu.requests().map((r) => r.decodedBytes ?? 0);
    const total = sizes.reduce((a, b) => a + b, 0);
    // Without growth every request would carry what is written in one
    // linger period. Relative to the write rate this run achieved (a loaded
    // machine writes slower, and then both shrink alike), batches must have
    // grown at least 5-fold: at 4 requests/s they carry what ~250 ms wrote.
    const perLinger = (total / writeMs) * config.batch.linger_ms;
    expect(total / sizes.length, `${sizes.length} requests for ${total} bytes written in ${writeMs} ms`).toBeGreaterThan(5 * perLinger);
  });
});
