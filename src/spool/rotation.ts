// Rotation, by identity (device + inode + the first bytes, identity.ts):
// - same identity at a new matching path: renamed, keeps its progress
//   (discovery.ts);
// - identity no longer at any matching path: detached, read to the end, then
//   finished (read-loop.ts; a partial remainder is sent as a whole line);
// - same inode, size below our offset or different first bytes: truncated
//   (copytruncate) or inode reuse: a new generation, read from 0.
import path from 'node:path';
import { fileKey, fingerprint, sameContentStart, FINGERPRINT_BYTES } from './identity.js';
import type { KnownFiles } from './known-files.js';
import { openRegular } from './open.js';
import type { SpoolerOptions } from './options.js';
import type { FileTailer } from './tailer.js';
import type { Tailers } from './tailers.js';
import { findByInode } from './walk.js';

export class Rotation {
  constructor(
    private readonly o: SpoolerOptions,
    private readonly tailers: Tailers,
    private readonly known: KnownFiles,
  ) {}

  /** The file is at another path now: follow it, and journal the path (after a kill -9 recovery re-forms its batches and resumes it by path). */
  moved(t: FileTailer, to: string): void {
    t.moveTo(to);
    const meta = this.o.store.metaOf(t.key);
    if (meta) this.o.store.updateFile({ ...meta, path: to });
  }

  /** A scan no longer found the file at any matching path: renamed out of the patterns, or deleted. */
  async detach(t: FileTailer): Promise<void> {
    // An open descriptor still reads it to the end; without one, look for
    // the inode in the same directory.
    let found = await findByInode(path.dirname(t.path), t.dev, t.ino);
    // The inode alone can mislead: deleted, then a new file created at once
    // may reuse it. Only a file that still starts with our fingerprint is
    // ours; a new one is left to the scan, which reads it from 0.
    // (An open descriptor keeps its inode from being reused: deleted while
    // open, the file is still drained through it.)
    if (found && !(await this.startsWithFingerprint(found, t.key))) found = null;
    if (found && found !== t.path) {
      const stillMatched = this.o.router.route(found) === t.ds;
      this.moved(t, found);
      // Renamed within the patterns between the scan's listing and its
      // stat: a rotation, not a departure. Detached, it would be finished at
      // its end and found again by the next scan as a new file (read twice).
      if (stillMatched) return;
    }
    if (found && !t.fh) await t.ensureOpen();
    t.detach();
  }

  /**
   * copytruncate: lines written after our last read and before the
   * truncation are gone. Inode reuse (delete, then create): a new file
   * under an old inode. Either way: start again at 0 as a new generation,
   * so ranges of the old content are never confused with the new.
   */
  async restart(t: FileTailer, size: number, why: 'truncated' | 'replaced'): Promise<void> {
    const gen = t.gen + 1;
    const key = fileKey(t.dev, t.ino, gen);
    this.tailers.remove(t);
    const fh = await t.ensureOpen();
    const f = fh ? await fingerprint(fh, size) : { fp: '', fpLen: 0 };
    this.o.store.trackFile({ key, dev: t.dev, ino: t.ino, gen, fp: f.fp, fpLen: f.fpLen, path: t.path, ds: t.ds }, 0);
    this.known.note(key, t.dev, t.ino);
    t.resetTo(0, key, gen);
    this.tailers.add(t);
    if (why === 'truncated') this.o.events.onTruncated(t.ds, t.path);
    else this.o.events.onDiscovered(t.ds, t.path);
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
