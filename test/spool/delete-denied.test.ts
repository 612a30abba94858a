// on_complete: delete where the agent may read a file but not delete it (a
// writer's directory 0755 of another user, a read-only mount): the file is
// kept, one WARN file_delete_failed names it and the errno, shipping goes
// on, and the deletion is tried again at each scan, so it happens once the
// agent may. The failed deletion was an unhandled rejection: the agent
// crashed, and crashed again at each restart. Root ignores file modes, so
// the agent runs as another uid (setpriv).
import { appendFileSync, chmodSync, chownSync, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OTHER_UID, checkDelivery, lines, spawnAgent, startEmu, tempDir, waitFor, waitForDelivery, writeConfig } from '../process/helpers.js';

describe('on_complete: delete without the right to delete (process, non-root agent)', () => {
  it('keeps the file with one WARN file_delete_failed (file, EACCES), ships on, and deletes it once it may', async () => {
    const dir = await tempDir();
    chmodSync(dir, 0o755);
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t, { spool: { idle_ms: 200, on_complete: 'delete' } });
    // The writer's directory: root's, 0755; the agent may read its files, not unlink them.
    const ev = path.join(cfg.spoolDir, 'ev');
    mkdirSync(ev, { recursive: true, mode: 0o755 });
    mkdirSync(cfg.stateDir, { mode: 0o700 });
    chownSync(cfg.stateDir, OTHER_UID, OTHER_UID);
    const a = path.join(ev, 'a.ndjson');
    appendFileSync(a, lines('d', 0, 50));
    const p = spawnAgent(cfg.configFile, {}, { uid: OTHER_UID });
    await p.started;
    await waitForDelivery(t, 'ev', 'd', 50, 'the first file');
    // A newer file supersedes a.ndjson: fully shipped and idle, it is to be deleted.
    appendFileSync(path.join(ev, 'b.ndjson'), lines('d', 50, 50));
    await waitForDelivery(t, 'ev', 'd', 100, 'the second file');
    const warned = await waitFor(() => p.logs.find((l) => l.event === 'file_delete_failed'), 'WARN file_delete_failed');
    expect(warned).toMatchObject({ level: 40, file: a, code: 'EACCES', datasource: 'ev' });
    expect(existsSync(a)).toBe(true);

    // Still shipping: a later file of another Data Source (a directory the agent owns) arrives.
    const other = path.join(cfg.spoolDir, 'other');
    mkdirSync(other, { mode: 0o755 });
    chownSync(other, OTHER_UID, OTHER_UID);
    appendFileSync(path.join(other, 'o.ndjson'), lines('o', 0, 10));
    await waitForDelivery(t, 'other', 'o', 10, "a later scan's file");

    // The agent may delete in ev now: the next scans delete a.ndjson.
    chownSync(ev, OTHER_UID, OTHER_UID);
    await waitFor(() => p.logs.some((l) => l.event === 'file_finished' && l.file === a && l.deleted === true), 'a.ndjson deleted');
    expect(existsSync(a)).toBe(false);

    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
    expect(await checkDelivery(t, 'ev', 'd', 100)).toMatchObject({ rows: 100, duplicates: 0, missing: 0, unexpected: 0 });
    expect(p.logs.filter((l) => l.event === 'file_delete_failed' && l.file === a)).toHaveLength(1);
    expect(p.logs.filter((l) => l.level >= 50)).toEqual([]);
  });
});
