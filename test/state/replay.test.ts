// One replay of a state_dir for both of its readers: the state store at
// start-up and `spoolship status` beside a running agent
// (src/state/replay.ts). Their answers must agree, including where a gap in
// one file abandons a batch that also covers another file.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { FileMeta } from '../../src/state/journal.js';
import { DEAD_LETTER_OWNER } from '../../src/state/progress.js';
import { StateStore } from '../../src/state/store.js';
import { relocateFiles } from '../../src/spool/relocate.js';
import { readStateView } from '../../src/report/state-reader.js';

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
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-replay-'));
    dirs.push(dir);
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
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-replay-'));
    dirs.push(dir);
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
});
