// `spoolship queue list|dead-letter`: the way out of a batch the platform
// will never accept, with the real CLI on a real state_dir.
import { execFile } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LINE_BYTES, checkDelivery, lines, metric, spawnAgent, startEmu, tempDir, waitFor, waitForDelivery, writeConfig } from './helpers.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

function cli(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd, env: { PATH: process.env.PATH ?? '' } }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

type Row = Record<string, unknown> & { id: number };
const ROW_KEYS = ['id', 'datasource', 'state', 'lines', 'bytes', 'compressed_bytes', 'age_ms', 'attempts', 'last_status', 'last_error'];

async function listRows(configFile: string, dir: string): Promise<Row[]> {
  const r = await cli(['queue', 'list', '-c', configFile, '--json'], dir);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.trim() === '' ? [] : r.stdout.trim().split('\n').map((l) => JSON.parse(l) as Row);
}

describe('spoolship queue (process)', () => {
  it('against the running agent: lists queued batches with their attempts, moves one (reason operator) while it runs, the rest ships', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t, { batch: { max_bytes: 50 * LINE_BYTES, linger_ms: 50 }, retry: { initial_ms: 10, max_ms: 50 } });
    const file = path.join(cfg.spoolDir, 'ev', 'a.ndjson');
    mkdirSync(path.dirname(file), { recursive: true });
    t.emu.setFaults([{ kind: 'status', status: 503 }]);
    appendFileSync(file, lines('q', 0, 200));
    const p = spawnAgent(cfg.configFile);
    const admin = (await p.started)!;
    await waitFor(async () => (await metric(admin, 'spoolship_queue_batches')) >= 4, 'four batches queued');

    const listed = await listRows(cfg.configFile, dir);
    expect(listed).toHaveLength(4);
    for (const b of listed) {
      expect(Object.keys(b)).toEqual(ROW_KEYS);
      // The running agent knows each batch's attempts and last answer.
      expect(b).toMatchObject({ datasource: 'ev', state: 'queued', lines: 50, bytes: 50 * LINE_BYTES, last_status: 503 });
      expect(b.attempts).toBeGreaterThanOrEqual(1);
    }
    expect((await cli(['queue', 'dead-letter', '-c', cfg.configFile], dir)).code).toBe(2);
    const unknown = await cli(['queue', 'dead-letter', '-c', cfg.configFile, String(listed[0]!.id), '99999'], dir);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('99999');
    // An ID that is not a number names no batch either: exit 1, nothing moved.
    const notAnId = await cli(['queue', 'dead-letter', '-c', cfg.configFile, String(listed[0]!.id), 'no-such-batch'], dir);
    expect(notAnId.code).toBe(1);
    expect(notAnId.stderr).toContain("no queued or parked batch 'no-such-batch'");
    expect(await listRows(cfg.configFile, dir)).toHaveLength(4);

    const first = String(listed[0]!.id);
    const moved = await cli(['queue', 'dead-letter', '-c', cfg.configFile, first, '--json'], dir);
    expect(moved.code, moved.stderr).toBe(0);
    expect(JSON.parse(moved.stdout)).toEqual({ moved_batches: 1, moved_lines: 50 });
    expect(moved.stderr).toContain(`moved batch ${first}`);
    await waitFor(async () => p.logs.some((l) => l.event === 'batch_dead_lettered' && l.batch === Number(first) && l.lines === 50), 'the agent logs the move');
    expect((await listRows(cfg.configFile, dir)).map((r) => r.id)).not.toContain(Number(first));
    const dl = (await cli(['dead-letter', 'list', '-c', cfg.configFile, '--json', '--reason', 'operator'], dir)).stdout.trim().split('\n').map((l) => JSON.parse(l) as { file: string; offset: number; status: number | null });
    expect(dl).toHaveLength(50);
    // Each line keeps where it came from: the spool file, and its own offset; and the batch's last answer.
    expect(dl.every((d) => d.file === file && d.status === 503)).toBe(true);
    expect(new Set(dl.map((d) => d.offset)).size).toBe(50);
    expect(dl.every((d) => d.offset % LINE_BYTES === 0)).toBe(true);

    // The outage ends: the 150 queued lines ship without a restart; the 50 moved ones do not.
    t.emu.setFaults([]);
    await waitFor(async () => (await checkDelivery(t, 'ev', 'q', 200)).unique === 150, 'the 150 lines still queued');
    await waitFor(async () => (await metric(admin, 'spoolship_queue_batches')) === 0, 'the queue is empty');
    expect(await metric(admin, 'spoolship_lines_dead_lettered_total{datasource="ev",reason="operator"}')).toBe(50);
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
    const r = await checkDelivery(t, 'ev', 'q', 200);
    expect({ missing: r.missing, duplicates: r.duplicates }).toEqual({ missing: 50, duplicates: 0 });
    expect(existsSync(path.join(cfg.stateDir, 'control.sock'))).toBe(false);
  });

  it('a Data Source parked by a request-level 400: its batches list as parked; moving them all lets new lines ship at once', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t, { batch: { max_bytes: 40 * LINE_BYTES, linger_ms: 50 }, retry: { initial_ms: 10, max_ms: 50 } });
    const file = path.join(cfg.spoolDir, 'ev', 'a.ndjson');
    mkdirSync(path.dirname(file), { recursive: true });
    t.emu.setFaults([{ kind: 'status', status: 400, datasource: 'ev' }]);
    appendFileSync(file, lines('bad', 0, 120));
    const p = spawnAgent(cfg.configFile);
    const admin = (await p.started)!;
    await waitFor(async () => (await metric(admin, 'spoolship_parked{reason="bad_request"}')) === 1, 'ev parked');
    await waitFor(async () => (await listRows(cfg.configFile, dir)).reduce((n, r) => n + (r.lines as number), 0) === 120, 'every line of ev listed');
    const rows = await listRows(cfg.configFile, dir);
    expect(rows.every((r) => r.state === 'parked' && r.datasource === 'ev')).toBe(true);
    expect(rows.some((r) => r.last_status === 400)).toBe(true);

    const moved = await cli(['queue', 'dead-letter', '-c', cfg.configFile, '--datasource', 'ev', '--json'], dir);
    expect(moved.code, moved.stderr).toBe(0);
    expect(JSON.parse(moved.stdout)).toEqual({ moved_batches: rows.length, moved_lines: 120 });
    expect(await listRows(cfg.configFile, dir)).toEqual([]);
    // The move released the park: nothing of ev waits any more, so /readyz is ready again at once.
    expect(await metric(admin, 'spoolship_parked{reason="bad_request"}')).toBe(0);
    expect(await (await fetch(`${admin}/readyz`)).json()).toEqual({ ready: true, reasons: [] });
    // The name was fine after all (the bad lines are gone): new lines ship without waiting for the 60 s probe.
    t.emu.setFaults([]);
    appendFileSync(file, lines('good', 0, 30));
    await waitForDelivery(t, 'ev', 'good', 30, 'the new lines ship');
    await waitFor(async () => (await metric(admin, 'spoolship_parked{reason="bad_request"}')) === 0, 'ev unparked');
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
    expect((await checkDelivery(t, 'ev', 'bad', 120)).unique).toBe(0);
  });

  it('on the state_dir of a stopped agent: lists and moves queued batches; the rest ships after the restart', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t, { batch: { max_bytes: 50 * LINE_BYTES, linger_ms: 50 }, retry: { initial_ms: 10, max_ms: 50 } });
    const file = path.join(cfg.spoolDir, 'ev', 'a.ndjson');
    mkdirSync(path.dirname(file), { recursive: true });
    t.emu.setFaults([{ kind: 'status', status: 503 }]);
    appendFileSync(file, lines('q', 0, 200));
    const p = spawnAgent(cfg.configFile);
    const admin = (await p.started)!;
    await waitFor(async () => (await metric(admin, 'spoolship_queue_batches')) >= 4, 'four batches queued');
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);

    const listed = await listRows(cfg.configFile, dir);
    expect(listed).toHaveLength(4);
    for (const b of listed) {
      expect(Object.keys(b)).toEqual(ROW_KEYS);
      // What the record kept when it was queued: the quick attempts and the last answer.
      expect(b).toMatchObject({ datasource: 'ev', state: 'queued', lines: 50, bytes: 50 * LINE_BYTES, last_status: 503, last_error: 'HTTP 503' });
      expect(b.attempts).toBeGreaterThanOrEqual(1);
    }
    expect((await cli(['queue', 'dead-letter', '-c', cfg.configFile], dir)).code).toBe(2);
    expect((await cli(['queue', 'dead-letter', '-c', cfg.configFile, '99999'], dir)).code).toBe(1);
    expect((await cli(['queue', 'dead-letter', '-c', cfg.configFile, 'abc'], dir)).code).toBe(1);
    const first = String(listed[0]!.id);
    const moved = await cli(['queue', 'dead-letter', '-c', cfg.configFile, first, '--json'], dir);
    expect(moved.code).toBe(0);
    expect(JSON.parse(moved.stdout)).toEqual({ moved_batches: 1, moved_lines: 50 });
    expect(moved.stderr).toContain(`moved batch ${first}`);
    expect(await listRows(cfg.configFile, dir)).toHaveLength(3);
    const dl = (await cli(['dead-letter', 'list', '-c', cfg.configFile, '--json', '--reason', 'operator'], dir)).stdout.trim().split('\n').map((l) => JSON.parse(l) as { file: string; offset: number; status: number | null });
    expect(dl).toHaveLength(50);
    expect(dl.every((d) => d.file === file && d.status === 503)).toBe(true);
    expect(new Set(dl.map((d) => d.offset)).size).toBe(50);

    // The outage ends: the 150 queued lines ship; the 50 moved ones do not (they are dead letters now).
    t.emu.setFaults([]);
    const q = spawnAgent(cfg.configFile);
    await q.started;
    await waitFor(async () => (await checkDelivery(t, 'ev', 'q', 200)).unique === 150, 'the 150 lines still queued');
    q.child.kill('SIGTERM');
    expect((await q.exited).code).toBe(0);
    const r = await checkDelivery(t, 'ev', 'q', 200);
    expect({ missing: r.missing, duplicates: r.duplicates }).toEqual({ missing: 50, duplicates: 0 });
  });
});
