// What a checkpoint keeps when it is taken at an awkward moment, and what a
// checkpoint that fails half-way leaves (state/store.ts checkpoint()): the
// next start, as after a kill -9, must find every batch still under way
// where it was, and nothing acknowledged sent again.
import { mkdirSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { FileMeta } from '../../src/state/journal.js';
import { DEAD_LETTER_OWNER } from '../../src/state/progress.js';
import { StateStore } from '../../src/state/store.js';
import { relocateFiles } from '../../src/spool/relocate.js';
import { mountTmpfs } from '../support/tmpfs.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-cpfault-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function meta(key: string, ino: number): FileMeta {
  // Paths that do not exist: relocation finds nothing and keeps them.
  return { key, dev: 1, ino, gen: 0, fp: '', fpLen: 0, path: `/nonexistent/spoolship-test/${key}.ndjson`, ds: 'events' };
}

async function open(dir: string): Promise<StateStore> {
  return StateStore.open({ stateDir: dir, now: () => 0, onBackgroundError: () => undefined, relocate: relocateFiles });
}

/** Descriptors this process holds on journal files of `dir`. */
function journalDescriptors(dir: string): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    let target = '';
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue;
    }
    if (target.startsWith(dir) && /journal-\d+\.log$/.test(target)) n++;
  }
  return n;
}

describe('checkpoints at awkward moments', () => {
  it('taken while a dead letter is being written, it keeps the batches after it in that file', async () => {
    const dir = await tempDir();
    const s = await open(dir);
    s.trackFile(meta('a', 1), 0);
    // a[0,10) batch 1 in flight; a[10,20) a dead letter being written;
    // a[20,30) batch 2 in flight; a[30,40) batch 3 acknowledged.
    const ids = [s.newBatchId(), s.newBatchId(), s.newBatchId()];
    s.claims.claim('a', 0, 10, ids[0]!);
    await s.recordIntent(ids[0]!, 'events');
    const dl = s.claims.claim('a', 10, 20, DEAD_LETTER_OWNER);
    s.claims.claim('a', 20, 30, ids[1]!);
    await s.recordIntent(ids[1]!, 'events');
    s.claims.claim('a', 30, 40, ids[2]!);
    await s.recordIntent(ids[2]!, 'events');
    s.completeBatch(ids[2]!);
    await s.checkpoint();
    // The dead letter is stored after the checkpoint; then a kill -9.
    s.completeDeadLetterRange('a', dl);
    await s.flush();
    await s.destroy();

    const recovered = await open(dir);
    cleanups.push(() => recovered.close());
    expect(recovered.recovery.intents.map((i) => i.id), 'batches in flight are re-formed from their ranges, byte-identical').toEqual([ids[0], ids[1]]);
    expect(recovered.recovery.resumeAt.get('a'), 'reading resumes after the acknowledged batch 3, not at the dead letter').toBe(40);
  });

  it('a checkpoint failing on a full disk while it closes the old journal loses no acknowledgement and leaks no descriptor (real tmpfs)', async () => {
    const dir = path.join(await tempDir(), 'state');
    mkdirSync(dir);
    cleanups.push(mountTmpfs(dir, '256k'));
    const s = await open(dir);
    s.trackFile(meta('a', 1), 0);
    const ids = Array.from({ length: 40 }, () => s.newBatchId());
    for (const [i, id] of ids.entries()) {
      s.claims.claim('a', i * 10, i * 10 + 10, id);
      await s.recordIntent(id, 'events');
    }
    // Fill the file system, then acknowledge: the acks sit in the journal's
    // buffer (group commit) when the checkpoint closes the journal.
    const filler = path.join(dir, 'filler');
    try {
      writeFileSync(filler, Buffer.alloc(512 * 1024));
    } catch {
      // ENOSPC once it is full: that is the point.
    }
    for (const id of ids) s.completeBatch(id);
    const before = journalDescriptors(dir);
    for (let attempt = 0; attempt < 3; attempt++) await expect(s.checkpoint(), `attempt ${attempt} on a full disk`).rejects.toMatchObject({ code: 'ENOSPC' });
    expect(journalDescriptors(dir) - before, 'failed attempts hold no extra journal descriptors').toBeLessThanOrEqual(1);
    // Space returns: the next group commit works; then a kill -9 before
    // any checkpoint could (a checkpoint would hold the acks by itself).
    rmSync(filler);
    s.trackFile(meta('b', 2), 0);
    await s.flush();
    await s.destroy();
    const leaked = journalDescriptors(dir);

    const recovered = await open(dir);
    cleanups.push(() => recovered.close());
    expect(recovered.recovery.intents.map((i) => i.id), 'every acknowledged batch stays acknowledged').toEqual([]);
    expect(recovered.recovery.resumeAt.get('a')).toBe(400);
    expect(leaked, 'a destroyed store holds no journal descriptor').toBe(0);
  });
});
