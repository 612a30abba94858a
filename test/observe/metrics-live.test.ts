// /metrics of a real running agent (`spoolship run` as a child process,
// the emulator on port 0): the series an alert needs exist before the first
// incident, no counter goes down on a SIGHUP reload, spoolship_behind_bytes
// counts what waits in the disk retry queue, and the text passes
// `promtool check metrics` (docs/metrics.md).
import { execFile } from 'node:child_process';
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { DEAD_LETTER_REASONS } from '../../src/deadletter/files.js';
import { LOST_REASONS, REQUEST_STATUSES, RETRY_REASONS } from '../../src/metrics/metrics.js';
import { lines, LINE_BYTES, metric, spawnAgent, startEmu, tempDir, waitFor, waitForDelivery, writeConfig } from '../process/helpers.js';

const metricsText = async (admin: string) => (await fetch(`${admin}/metrics`)).text();

/** The value of exactly one series, labels as prom-client writes them (sorted as registered). */
function series(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const sel = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',');
  const head = sel ? `${name}{${sel}} ` : `${name} `;
  const l = text.split('\n').find((x) => x.startsWith(head));
  return l === undefined ? undefined : Number(l.slice(head.length));
}

function expectZeroSeries(text: string, ds: string): void {
  for (const name of ['spoolship_lines_acked_total', 'spoolship_bytes_sent_total', 'spoolship_rows_quarantined_total']) {
    expect(series(text, name, { datasource: ds }), `${name}{datasource="${ds}"}`).toBe(0);
  }
  for (const name of ['spoolship_lines_read_total', 'spoolship_bytes_read_total']) {
    expect(series(text, name, { datasource: ds }), `${name}{datasource="${ds}"}`).toBeGreaterThanOrEqual(0);
  }
  for (const reason of DEAD_LETTER_REASONS) {
    expect(series(text, 'spoolship_lines_dead_lettered_total', { datasource: ds, reason }), `dead letters ${ds} ${reason}`).toBe(0);
  }
  for (const status of REQUEST_STATUSES) {
    expect(series(text, 'spoolship_requests_total', { datasource: ds, status }), `requests ${ds} ${status}`).toBe(0);
  }
  for (const reason of LOST_REASONS) {
    expect(series(text, 'spoolship_lines_lost_total', { datasource: ds, reason }), `lost ${ds} ${reason}`).toBe(0);
  }
}

function promtoolCheckMetrics(text: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const child = execFile('promtool', ['check', 'metrics'], (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr });
    });
    child.stdin!.end(text);
  });
}

describe('/metrics of a running agent', () => {
  it('has a 0 series for every known Data Source and reason from the start, and for a Data Source first seen later before it counts', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const spoolDir = path.join(dir, 'spool');
    // Known at the start: a directory with a file, an empty directory, a spool.sources route with no file yet.
    await mkdir(path.join(spoolDir, 'ev'), { recursive: true });
    await mkdir(path.join(spoolDir, 'empty'), { recursive: true });
    await writeFile(path.join(spoolDir, 'ev', 'a.ndjson'), lines('e', 0, 20));
    const cfg = await writeConfig(dir, t, { spool: { max_line_bytes: 1000, sources: [{ include: [path.join(dir, 'routed', '*.log')], datasource: 'routed' }] } });
    const p = spawnAgent(cfg.configFile);
    const admin = (await p.started)!;
    await waitFor(async () => (await metric(admin, 'spoolship_lines_acked_total', 'datasource="ev"')) === 20, 'ev acknowledged');
    // The empty directory is known from the first scan (each scan checks the layout).
    await waitFor(async () => series(await metricsText(admin), 'spoolship_lines_read_total', { datasource: 'empty' }) === 0, 'the empty directory\'s series');
    const text = await metricsText(admin);
    for (const ds of ['empty', 'routed']) expectZeroSeries(text, ds);
    for (const reason of DEAD_LETTER_REASONS) expect(series(text, 'spoolship_lines_dead_lettered_total', { datasource: 'ev', reason })).toBe(0);
    for (const reason of LOST_REASONS) expect(series(text, 'spoolship_lines_lost_total', { datasource: 'ev', reason })).toBe(0);
    for (const reason of RETRY_REASONS) expect(series(text, 'spoolship_retries_total', { reason }), `retries ${reason}`).toBe(0);

    // A Data Source first seen now: its dead-letter series is there at 0 and
    // then counts 1 (an increase() over the two scrapes is 1, not nothing).
    await mkdir(path.join(spoolDir, 'late'));
    await writeFile(path.join(spoolDir, 'late', 'a.ndjson'), 'x'.repeat(2000) + '\n' + lines('l', 0, 5));
    await waitFor(async () => (await metric(admin, 'spoolship_lines_acked_total', 'datasource="late"')) === 5, 'late acknowledged');
    const after = await metricsText(admin);
    expect(series(after, 'spoolship_lines_dead_lettered_total', { datasource: 'late', reason: 'line_too_long' })).toBe(1);
    for (const reason of DEAD_LETTER_REASONS.filter((r) => r !== 'line_too_long')) {
      expect(series(after, 'spoolship_lines_dead_lettered_total', { datasource: 'late', reason })).toBe(0);
    }
    for (const reason of LOST_REASONS) expect(series(after, 'spoolship_lines_lost_total', { datasource: 'late', reason })).toBe(0);
  });

  it('no counter goes down on a SIGHUP reload that restarts the pipeline', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t);
    const file = path.join(cfg.spoolDir, 'ev', 'a.ndjson');
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, lines('r', 0, 200));
    const p = spawnAgent(cfg.configFile);
    const admin = (await p.started)!;
    await waitFor(async () => (await metric(admin, 'spoolship_lines_acked_total', 'datasource="ev"')) === 200, '200 acknowledged');
    const before = await metricsText(admin);
    // A changed config: the pipeline restarts in-process (README "Reload").
    await writeFile(cfg.configFile, stringify({ ...parse(await readFile(cfg.configFile, 'utf8')), compression: { codec: 'gzip' } }));
    p.child.kill('SIGHUP');
    const restarted = await waitFor(() => p.logs.filter((l) => l.event === 'started')[1], 'the restarted pipeline');
    // admin.listen is 127.0.0.1:0 here: the restarted admin server has a port of its own.
    const admin2 = restarted.admin as string;
    await appendFile(file, lines('r', 200, 100));
    await waitForDelivery(t, 'ev', 'r', 300, 'the 300 rows stored');
    // Committed after its acknowledgement was counted.
    await waitFor(async () => (await metric(admin2, 'spoolship_behind_bytes', 'datasource="ev"')) === 0, 'nothing behind');
    const after = await metricsText(admin2);
    expect(series(after, 'spoolship_lines_read_total', { datasource: 'ev' })).toBe(300);
    expect(series(after, 'spoolship_lines_acked_total', { datasource: 'ev' })).toBe(300);
    expect(series(after, 'spoolship_bytes_read_total', { datasource: 'ev' })).toBe(300 * LINE_BYTES);
    // Every counter of the first scrape is there and not lower.
    for (const l of before.split('\n')) {
      const m = /^(spoolship_\w+_total(?:\{[^}]*\})?) (\S+)$/.exec(l);
      if (!m) continue;
      const now = after.split('\n').find((x) => x.startsWith(`${m[1]} `));
      expect(now, m[1]).toBeDefined();
      expect(Number(now!.slice(m[1]!.length + 1)), m[1]).toBeGreaterThanOrEqual(Number(m[2]));
    }
  });

  it('behind_bytes counts the batches waiting in the disk retry queue until they are acknowledged', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir, { faults: [{ kind: 'status', status: 503 }] });
    const cfg = await writeConfig(dir, t, { retry: { initial_ms: 10, max_ms: 50 } });
    const p = spawnAgent(cfg.configFile);
    const admin = (await p.started)!;
    const file = path.join(cfg.spoolDir, 'ev', 'a.ndjson');
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, lines('q', 0, 1000));
    await waitFor(async () => (await metric(admin, 'spoolship_queue_batches')) >= 1 && (await metric(admin, 'spoolship_lines_read_total', 'datasource="ev"')) === 1000, 'a batch in the disk queue');
    // Read, sent and failed, now on disk in the queue: still not acknowledged.
    expect(await metric(admin, 'spoolship_behind_bytes', 'datasource="ev"')).toBe(1000 * LINE_BYTES);
    await waitFor(async () => (await metric(admin, 'spoolship_queue_batches')) >= 1 && (await metric(admin, 'spoolship_requests_total', 'status="503"')) >= 10, 'more failed attempts');
    expect(await metric(admin, 'spoolship_behind_bytes', 'datasource="ev"')).toBe(1000 * LINE_BYTES);

    // The outage ends: everything is acknowledged and nothing is behind.
    t.emu.setFaults([]);
    await waitFor(async () => (await metric(admin, 'spoolship_lines_acked_total', 'datasource="ev"')) === 1000, 'all acknowledged');
    await waitFor(async () => (await metric(admin, 'spoolship_behind_bytes', 'datasource="ev"')) === 0, 'nothing behind');
  });

  it('spoolship_ready follows /readyz, spoolship_build_info names the version and node, and the text passes promtool check metrics', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir, { faults: [{ kind: 'status', status: 503 }] });
    const cfg = await writeConfig(dir, t, { retry: { initial_ms: 10, max_ms: 50 } });
    const p = spawnAgent(cfg.configFile);
    const admin = (await p.started)!;
    const text0 = await metricsText(admin);
    expect((await fetch(`${admin}/readyz`)).status).toBe(200);
    expect(series(text0, 'spoolship_ready')).toBe(1);
    const build = text0.split('\n').find((l) => l.startsWith('spoolship_build_info{'));
    expect(build).toMatch(new RegExp(`^spoolship_build_info\\{version="\\d+\\.\\d+\\.\\d+[^"]*",node="${process.version.replace(/\./g, '\\.')}"\\} 1$`));

    const file = path.join(cfg.spoolDir, 'ev', 'a.ndjson');
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, lines('q', 0, 100));
    await waitFor(async () => (await fetch(`${admin}/readyz`)).status === 503, '/readyz 503');
    const stalled = await metricsText(admin);
    expect(series(stalled, 'spoolship_ready')).toBe(0);

    const lint = await promtoolCheckMetrics(stalled);
    expect(lint.out).toBe('');
    expect(lint.code).toBe(0);

    t.emu.setFaults([]);
    await waitFor(async () => (await fetch(`${admin}/readyz`)).status === 200, '/readyz 200');
    expect(await metric(admin, 'spoolship_ready')).toBe(1);
  });
});
