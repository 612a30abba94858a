// `spoolship queue list|dead-letter`: the way out of a batch the platform
// will never accept, with the real CLI on a real state_dir.
import { execFile } from 'node:child_process';
import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LINE_BYTES, checkDelivery, lines, metric, spawnAgent, startEmu, tempDir, waitFor, writeConfig } from './helpers.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

function cli(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd, env: { PATH: process.env.PATH ?? '' } }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('spoolship queue (process)', () => {
  it('lists queued batches, moves one to the dead letters (reason operator), and the rest ships after the restart', async () => {
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
    // While the agent runs: list works, moving refuses (nothing moved).
    const live = await cli(['queue', 'list', '-c', cfg.configFile, '--json'], dir);
    expect(live.code, live.stderr).toBe(0);
    const running = await cli(['queue', 'dead-letter', '-c', cfg.configFile, '--datasource', 'ev'], dir);
    expect(running.code).toBe(1);
    expect(running.stderr).toContain('is running');
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);

    const listed = (await cli(['queue', 'list', '-c', cfg.configFile, '--json'], dir)).stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(listed).toHaveLength(4);
    for (const b of listed) {
      expect(Object.keys(b)).toEqual(['id', 'datasource', 'state', 'lines', 'bytes', 'compressed_bytes', 'age_ms', 'attempts', 'last_status', 'last_error']);
      expect(b).toMatchObject({ datasource: 'ev', state: 'queued', lines: 50, bytes: 50 * LINE_BYTES });
    }
    expect((await cli(['queue', 'dead-letter', '-c', cfg.configFile], dir)).code).toBe(2);
    expect((await cli(['queue', 'dead-letter', '-c', cfg.configFile, '99999'], dir)).code).toBe(1);
    const first = String(listed[0]!.id);
    const moved = await cli(['queue', 'dead-letter', '-c', cfg.configFile, first, '--json'], dir);
    expect(moved.code).toBe(0);
    expect(JSON.parse(moved.stdout)).toEqual({ moved_batches: 1, moved_lines: 50 });
    expect(moved.stderr).toContain(`moved batch ${first}`);
    expect((await cli(['queue', 'list', '-c', cfg.configFile, '--json'], dir)).stdout.trim().split('\n')).toHaveLength(3);
    const dl = (await cli(['dead-letter', 'list', '-c', cfg.configFile, '--json', '--reason', 'operator'], dir)).stdout.trim().split('\n').map((l) => JSON.parse(l) as { file: string; offset: number });
    expect(dl).toHaveLength(50);
    // Each line keeps where it came from: the spool file, and its own offset.
    expect(dl.every((d) => d.file === file)).toBe(true);
    expect(new Set(dl.map((d) => d.offset)).size).toBe(50);
    expect(dl.every((d) => d.offset % LINE_BYTES === 0)).toBe(true);

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
