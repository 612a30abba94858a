// After each scan: files finished and fully committed are forgotten (by the
// spooler and the state), and so are old generations of a file (before a
// copytruncate, or of an inode now reused) once nothing read from them is
// pending; with on_complete: delete, a file fully committed, idle for
// idle_ms and superseded (renamed out of the patterns, or a newer file grows
// in its directory) is deleted and finished.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { SpoolerOptions } from './options.js';
import type { FileTailer } from './tailer.js';
import type { Tailers } from './tailers.js';

export async function collectFinished(o: SpoolerOptions, tailers: Tailers): Promise<void> {
  const store = o.store;
  forgetOldGenerations(o, tailers);
  for (const t of tailers.list()) {
    const fp = store.file(t.key);
    const fullyCommitted = fp !== undefined && fp.entries.length === 0 && fp.committed >= t.readOffset && t.carriedBytes === 0;
    if (t.finished && fullyCommitted) {
      tailers.remove(t);
      store.forgetFile(t.key);
      continue;
    }
    if (o.onComplete === 'delete' && !t.finished && fullyCommitted && superseded(t, tailers)) {
      const idle = o.clock.now() - t.lastGrowthAt >= o.idleMs;
      if (!idle) continue;
      await fsp.rm(t.path, { force: true });
      await t.closeFd();
      t.finish();
      o.events.onFinished(t.ds, t.path, true);
    }
  }
}

/** Renamed out of the patterns, or a newer file exists in the same directory. */
function superseded(t: FileTailer, tailers: Tailers): boolean {
  if (t.detached) return true;
  const dir = path.dirname(t.path);
  for (const other of tailers.values()) {
    if (other !== t && !other.finished && path.dirname(other.path) === dir && other.lastGrowthAt > t.lastGrowthAt) return true;
  }
  return false;
}

/**
 * The state's entries of an inode's older generations, once their batches
 * are all done: the inode is followed as a newer generation, so nothing will
 * read them again. Without this every copytruncate added an entry for good
 * (to the checkpoint and to each start-up's relocation).
 */
function forgetOldGenerations(o: SpoolerOptions, tailers: Tailers): void {
  const old: string[] = [];
  for (const fp of o.store.files()) {
    const m = fp.meta;
    if (fp.entries.length > 0 || tailers.has(m.key)) continue;
    const current = tailers.ofInode(m.dev, m.ino);
    if (current && current.gen > m.gen) old.push(m.key);
  }
  for (const key of old) o.store.forgetFile(key);
}
