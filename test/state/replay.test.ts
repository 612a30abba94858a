// One replay of a state_dir for both of its readers: the state store at
// start-up and `spoolship status` beside a running agent
// (src/state/replay.ts). Their answers must agree, including where a gap in
// one file abandons a batch that also covers another file.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { FileMeta } from '../../src/state/journal.js';
import { DEAD_LETTER_OWNER } from '../../src/state/progress.js';
import { StateStore } from '../../src/state/store.js';
import { relocateFiles } from '../../src/spool/relocate.js';
import { readStateView } from '../../src/report/state-reader.js';
import { StateCorruptError } from '../../src/errors.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

function meta(key: string, ino: number): FileMeta {
  // Paths that do not exist: relocation finds nothing and keeps them.
  return { key, dev: 1, ino, gen: 0, fp: '', fpLen: 0, path: `/nonexistent/spoolship-test/${key}.ndjson`, ds: 'events' };
}

async function store(dir: string): Promise<StateStore> {
  return StateStore.open({ stateDir: dir, now: () => 0, onBackgroundError: (err) => { throw err; }, relocate: relocateFiles });
}

describe('state replay', () => {
  it('status and start-up recovery agree where a gap in one file abandons a batch that also covers another', async () => {
    const dir = await tempReplayDir();
    const s = await store(dir);
    s.trackFile(meta('a', 1), 0);
    s.trackFile(meta('b', 2), 0);
    // Batch 1: a[0,10), recorded. Then a dead letter a[10,20) claimed but never
    // recorded (the crash came first): a gap at 10 in a.
    const b1 = s.newBatchId();
    s.claims.claim('a', 0, 10, b1);
    await s.recordIntent(b1, 'events');
    s.claims.claim('a', 10, 20, DEAD_LETTER_OWNER);
    // Batch 2 after the gap: a[20,30) and b[0,10), recorded, not acknowledged.
    const b2 = s.newBatchId();
    s.claims.claim('a', 20, 30, b2);
    s.claims.claim('b', 0, 10, b2);
    await s.recordIntent(b2, 'events');
    await s.flush();
    await s.close(); // no checkpoint after the records: like a kill -9

    const view = await readStateView(dir);
    const recovered = await store(dir);
    // Recovery reads a again from the gap and abandons batch 2, so b is read again from 0 as well.
    expect(Object.fromEntries(recovered.recovery.resumeAt)).toEqual({ a: 10, b: 0 });
    expect(recovered.recovery.intents.map((i) => i.id)).toEqual([b1]);
    expect(Object.fromEntries(view.files.map((f) => [f.meta.key, { committed: f.committed, read: f.read }]))).toEqual({
      a: { committed: 0, read: 10 },
      b: { committed: 0, read: 0 },
    });
    expect(view.pendingBatches).toBe(1);
    await recovered.close();
  });

  it('a batch queued under an id of its own (a piece of a cut batch, no intent) keeps its id out of the next batches after a crash', async () => {
    const dir = await tempReplayDir();
    const s = await store(dir);
    s.trackFile(meta('a', 1), 0);
    const b1 = s.newBatchId();
    s.claims.claim('a', 0, 10, b1);
    await s.recordIntent(b1, 'events');
    // Two pieces of batch 1 queued with new ids, then batch 1 done.
    const p1 = s.newBatchId();
    const p2 = s.newBatchId();
    await s.recordQueued({ id: p1, ds: 'events', lines: 1, ranges: [{ file: 'a', start: 0, end: 4, crc: null }] });
    await s.recordQueued({ id: p2, ds: 'events', lines: 1, ranges: [{ file: 'a', start: 4, end: 10, crc: null }] });
    s.completeBatch(b1);
    await s.flush();
    await s.close(); // no checkpoint after the records: like a kill -9

    const recovered = await store(dir);
    expect(recovered.queuedIntents().map((q) => q.id).sort()).toEqual([p1, p2]);
    expect(recovered.newBatchId()).toBeGreaterThan(p2);
    await recovered.close();
  });

  it('a file begun at its end (start_at: end) resumes there after a kill -9 before the next checkpoint: the skipped bytes are not read', async () => {
    const dir = await tempReplayDir();
    const s = await store(dir);
    s.trackFile(meta('a', 1), 500);
    await s.flush();
    await s.close(); // no checkpoint after the record: like a kill -9

    const recovered = await store(dir);
    expect(Object.fromEntries(recovered.recovery.resumeAt)).toEqual({ a: 500 });
    await recovered.close();
  });
});

describe('both checkpoint copies damaged: the state is rebuilt from the journals', () => {
  const damage = async (dir: string) => {
    for (const f of ['checkpoint.json', 'checkpoint.json.prev']) await writeFile(path.join(dir, f), '{"version":2,"garbage":true}\n#crc32 00000000\n');
  };

  it('a file the journals follow from its first byte resumes exactly; one they take up later is read from 0; unknown files are read from their start', async () => {
    const dir = await tempReplayDir();
    const s = await store(dir);
    s.trackFile(meta('a', 1), 0);
    s.trackFile(meta('c', 3), 0);
    const b1 = s.newBatchId();
    s.claims.claim('a', 0, 10, b1);
    s.claims.claim('c', 0, 10, b1);
    await s.recordIntent(b1, 'events');
    s.completeBatch(b1);
    // Two checkpoints: the journal that tracked 'a' and 'c' is deleted.
    await s.checkpoint();
    await s.checkpoint();
    // 'a' is renamed (its record is journaled again), 'c' is never named again.
    const renamed = { ...meta('a', 1), path: '/nonexistent/spoolship-test/a.ndjson.1' };
    s.updateFile(renamed);
    s.trackFile(meta('b', 2), 0);
    const b2 = s.newBatchId();
    s.claims.claim('a', 10, 20, b2);
    s.claims.claim('b', 0, 10, b2);
    await s.recordIntent(b2, 'events');
    s.completeBatch(b2);
    const b3 = s.newBatchId();
    s.claims.claim('b', 10, 30, b3);
    await s.recordIntent(b3, 'events');
    await s.flush();
    await s.close();
    await damage(dir);

    const rebuilt = await store(dir);
    const rec = rebuilt.recovery;
    expect(rec.rebuiltFromJournals).toBe(true);
    expect(rec.checkpointProblem).toContain('checkpoint.json: CRC mismatch');
    expect(rec.checkpointProblem).toContain('checkpoint.json.prev: CRC mismatch');
    // 'a' has no record of its first 10 bytes any more: read from 0. 'b' resumes after its acknowledged batch, and batch 3 is re-formed.
    // 'c' is unknown: the scan finds it as a new file, read from its start.
    expect(Object.fromEntries(rec.resumeAt)).toEqual({ a: 0, b: 30 });
    expect(rebuilt.committedOf('b')).toBe(10);
    expect(rec.intents.map((i) => i.id)).toEqual([b3]);
    expect(rec.affectedFiles.map((f) => [f.file, f.read_from])).toEqual([
      [renamed.path, 0],
      [meta('b', 2).path, 30],
    ]);
    expect(rebuilt.unknownFilesFromStart).toBe(true);
    expect(rebuilt.newBatchId()).toBeGreaterThan(b3);
    await rebuilt.close();
  });

  it('the rebuild is kept in every checkpoint until a scan has ended: unknown files stay read from their start across restarts', async () => {
    const dir = await tempReplayDir();
    const s = await store(dir);
    s.trackFile(meta('a', 1), 0);
    await s.flush();
    await s.close();
    await damage(dir);

    const rebuilt = await store(dir);
    expect(rebuilt.unknownFilesFromStart).toBe(true);
    // A restart (the `queue` command, a crash) before any scan has ended keeps it.
    await rebuilt.checkpoint();
    await rebuilt.close();
    const again = await store(dir);
    expect(again.recovery.rebuiltFromJournals).toBe(false);
    expect(again.unknownFilesFromStart).toBe(true);
    again.setSeenProvider({ seenOf: () => undefined, scannedOnce: false });
    await again.checkpoint();
    expect(await readFile(path.join(dir, 'checkpoint.json'), 'utf8')).toContain('"unknown_files_from_start":true');
    again.setSeenProvider({ seenOf: () => undefined, scannedOnce: true });
    await again.checkpoint();
    expect(again.unknownFilesFromStart).toBe(false);
    await again.close();
    const after = await store(dir);
    expect(after.unknownFilesFromStart).toBe(false);
    expect(Object.fromEntries(after.recovery.resumeAt)).toEqual({ a: 0 });
    await after.close();
  });

  it('without a journal record to rebuild from: StateCorruptError naming both copies (exit 1, how to start over); status reads the same', async () => {
    const dir = await tempReplayDir();
    const s = await store(dir);
    await s.close();
    expect((await readdir(dir)).filter((n) => n.startsWith('journal-')).length).toBeGreaterThan(0);
    await damage(dir);
    const err = await store(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateCorruptError);
    expect((err as StateCorruptError).problems).toEqual([
      `${path.join(dir, 'checkpoint.json')}: CRC mismatch (the file was changed or damaged)`,
      `${path.join(dir, 'checkpoint.json.prev')}: CRC mismatch (the file was changed or damaged)`,
      'no journal record to rebuild the state from (2 journal files)',
    ]);
    expect((err as Error).message).toMatch(/start over/);
    await expect(readStateView(dir)).rejects.toBeInstanceOf(StateCorruptError);
  });

  it('new batch ids stay above the ids of the disk queue, which a rebuilt state may not know', async () => {
    const dir = await tempReplayDir();
    const s = await store(dir);
    s.reserveIds([41, 7]);
    expect(s.newBatchId()).toBe(42);
    s.reserveIds([3]);
    expect(s.newBatchId()).toBe(43);
    await s.close();
  });
});

async function tempReplayDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-replay-'));
  dirs.push(dir);
  return dir;
}
