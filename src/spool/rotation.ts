// Rotation, by identity (device + inode + the first bytes, identity.ts):
// - same identity at a new matching path: renamed, keeps its progress
//   (discovery.ts);
// - identity no longer at any matching path: detached, read through its
//   descriptor until idle for idle_ms (deleted: to its end), then finished
//   (read-loop.ts; a partial remainder is sent as a whole line); its new
//   path, read from the descriptor, is journaled. Without a
//   descriptor (given back while idle) it is looked for by inode and first
//   bytes in its directory, the directories in it and those beside it
//   (logrotate's olddir), so a tail written just before the move is read;
// - same inode, size below our offset or different first bytes: truncated
//   (copytruncate) or inode reuse: a new generation, read from 0.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { fileKey, fingerprint, sameContentStart, FINGERPRINT_BYTES } from './identity.js';
import type { KnownFiles } from './known-files.js';
import { openRegular } from './open.js';
import type { RotationOptions } from './options.js';
import type { FileTailer } from './tailer.js';
import type { Tailers } from './tailers.js';
import type { FileMeta } from '../state/journal.js';
import { findByInode, nearbyDirs } from './walk.js';

export class Rotation {
  constructor(
    private readonly o: RotationOptions,
    private readonly tailers: Tailers,
    private readonly known: KnownFiles,
  ) {}

  /** The file is at another path now: follow it, and journal the path (after a kill -9 recovery re-forms its batches and resumes it by path). */
  moved(t: FileTailer, to: string): void {
    t.moveTo(to);
    const meta = this.o.store.metaOf(t.key);
    // Renamed out of the patterns, journaled so: a restart may delete it too
    // (on_complete: delete). Never so for a file the config stopped matching first.
    const away = t.detached ? t.renamedAway : this.o.router.route(to) !== t.ds;
    if (meta) this.o.store.updateFile(atPath(meta, to, away));
  }

  /** A scan no longer found the file at any matching path: renamed out of the patterns, or deleted. */
  async detach(t: FileTailer): Promise<void> {
    // An open descriptor names where it is (/proc/self/fd: one readlink),
    // or that it was deleted (no links). Looking for the inode in the
    // directory took a stat of every entry there: with the rotated files
    // piling up (or 2,000 others beside them), each rotation's scan took
    // long enough, and paced the next one far enough (spooler.ts), that a
    // file created and renamed away in between was never seen (whole files
    // lost). Without a descriptor, or where /proc is missing: the inode is
    // looked for in the same directory (a rename within the patterns is no
    // departure), then where logrotate's olddir puts it.
    const was = t.path;
    let found = t.fh ? await pathOfDescriptor(t) : null;
    const deleted = !found && t.fh !== null && (await t.fh.stat().catch(() => null))?.nlink === 0;
    if (!found && !deleted) found = await this.findMoved(t, path.dirname(t.path));
    if (!found && !t.fh) for (const dir of await nearbyDirs(path.dirname(t.path))) if ((found = await this.findMoved(t, dir))) break;
    if (found && found !== t.path) {
      const stillMatched = this.o.router.route(found) === t.ds;
      this.moved(t, found);
      // Renamed within the patterns between the scan's listing and its
      // stat: a rotation, not a departure. Detached, it would be finished at
      // its end and found again by the next scan as a new file (read twice).
      if (stillMatched) return;
    }
    if (found && !t.fh) await t.ensureOpen();
    // Where it was (a config that matches it no more): not renamed out of the patterns.
    t.detach(this.o.clock.now(), found === was ? 'unmatched' : 'renamed');
    await this.statDetached(t);
  }

  /** A detached file's size and links, through its descriptor (its name is not listed any more). */
  async statDetached(t: FileTailer): Promise<void> {
    const st = await t.fh?.stat().catch(() => null);
    if (!st) return;
    t.sawDetachedStat(st);
    // Renamed again (logrotate's app.1 -> app.2): journal where it is, so a
    // restart finds it there.
    const now = st.nlink > 0 ? await pathOfDescriptor(t) : null;
    if (now && now !== t.path) this.moved(t, now);
  }

  /**
   * The path in `dir` of the file with t's inode that still starts with its
   * fingerprint. The inode alone can mislead: deleted, then a new file
   * created at once may reuse it; a new one is left to the scan, which
   * reads it from 0. (An open descriptor keeps its inode from being reused.)
   */
  private async findMoved(t: FileTailer, dir: string): Promise<string | null> {
    const found = await findByInode(dir, t.dev, t.ino);
    return found && (await this.startsWithFingerprint(found, t.key)) ? found : null;
  }

  /**
   * copytruncate: lines written after our last read and before the
   * truncation are gone. Inode reuse (delete, then create): a new file
   * under an old inode. Either way: start again at 0 as a new generation,
   * so ranges of the old content are never confused with the new. Returns
   * the telling of it, which the scan does once the new generation's record
   * is on disk, as a new file's (discovery.ts told): a kill -9 just after,
   * then a rename out of the patterns while the agent is down, found only
   * the old generation's first bytes, and the file was not ours.
   */
  async restart(t: FileTailer, size: number, why: 'truncated' | 'replaced'): Promise<() => void> {
    const gen = t.gen + 1;
    const key = fileKey(t.dev, t.ino, gen);
    this.tailers.remove(t);
    const fh = await t.ensureOpen();
    const f = fh ? await fingerprint(fh, size) : { fp: '', fpLen: 0 };
    this.o.store.trackFile({ key, dev: t.dev, ino: t.ino, gen, fp: f.fp, fpLen: f.fpLen, path: t.path, ds: t.ds }, 0);
    this.known.note(key, t.dev, t.ino);
    t.resetTo(0, key, gen);
    this.tailers.add(t);
    const { ds, path: p } = t;
    return why === 'truncated' ? () => this.o.events.onTruncated(ds, p) : () => this.o.events.onDiscovered(ds, p);
  }

  /**
   * Does the file still start with the bytes we fingerprinted? While the
   * fingerprint covers fewer than FINGERPRINT_BYTES it is extended as the
   * file grows.
   */
  async startsAsKnown(t: FileTailer, size: number): Promise<boolean> {
    const fp = this.o.store.file(t.key);
    if (!fp) return true;
    const fh = await t.ensureOpen();
    if (!fh) return true;
    if (!(await sameContentStart(fh, size, fp.meta))) return false;
    if (fp.meta.fpLen < FINGERPRINT_BYTES && size > fp.meta.fpLen) {
      const f = await fingerprint(fh, size);
      this.o.store.updateFile({ ...fp.meta, fp: f.fp, fpLen: f.fpLen });
    }
    return true;
  }

  private async startsWithFingerprint(p: string, key: string): Promise<boolean> {
    const meta = this.o.store.metaOf(key);
    if (!meta) return false;
    const opened = await openRegular(p);
    if (!opened) return false;
    const { fh, st } = opened;
    try {
      return await sameContentStart(fh, st.size, meta);
    } finally {
      await fh.close();
    }
  }
}

/**
 * Where the file open on t's descriptor is now (Linux: /proc/self/fd), when
 * that path still names it; null elsewhere or when deleted. Journaled as its
 * path, a file moved anywhere (an olddir on another branch of the tree) is
 * found again after a kill -9.
 */
async function pathOfDescriptor(t: FileTailer): Promise<string | null> {
  if (!t.fh) return null;
  const p = await fsp.readlink(`/proc/self/fd/${t.fh.fd}`).catch(() => null);
  if (!p || !path.isAbsolute(p)) return null;
  const st = await fsp.stat(p).catch(() => null);
  return st?.isFile() && st.dev === t.dev && st.ino === t.ino ? p : null;
}

/** `meta` at `path`, marked `away` when it was renamed out of the patterns (journal.ts FileMeta). */
export function atPath(meta: FileMeta, to: string, away: boolean): FileMeta {
  const { away: _was, ...rest } = meta;
  return away ? { ...rest, path: to, away: true } : { ...rest, path: to };
}
