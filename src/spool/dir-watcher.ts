// The spool's directory watch: one fs.watch (inotify) per directory the last
// scan listed, whose events mark the spool dirty (spooler.ts). An inotify
// watch on a directory reports every change of the files in it (created,
// written, renamed, deleted), which is all the scan needs to be asked for;
// a name created or renamed into the directory (a `rename` event) is also
// handed on, to be looked at before the next scan (discovery.ts lookAt).
//
// Why not chokidar: at each change event of a watched directory it listed
// the directory again and lstat'd every entry, to work out its own add and
// unlink events, which nobody here listens to. With 300 rotated files beside
// five busy writers that was a third of a core, and with 2,000 archives
// beside one writer more: the scans it delayed (and paced further apart)
// let a file created and renamed away in between go unseen (whole files
// lost; bench/README.md).
import { watch, type FSWatcher } from 'node:fs';
import path from 'node:path';

/** Directories watched at most; past it the periodic rescan is not relaxed (`complete`). */
export const MAX_WATCHED_DIRS = 4096;

export class DirWatcher {
  private readonly watching = new Map<string, FSWatcher>();
  private wanted = 0;
  /** Directories added between scans (add()); the next sync keeps those it lists. */
  private added = 0;
  private closed = false;

  /** `arrived`: the path a `rename` event named (created, renamed in, or gone), else null. */
  constructor(private readonly onEvent: (arrived: string | null) => void) {}

  /**
   * Watch exactly `dirs` (those the last scan listed): new ones are added,
   * those gone are let go. A directory that cannot be watched (gone,
   * out of inotify watches) is tried again at the next sync. Returns the
   * directories newly watched (a change there between the scan's listing
   * and now was not seen).
   */
  sync(dirs: readonly string[]): number {
    if (this.closed) return 0;
    let added = 0;
    const want = new Set(dirs.slice(0, MAX_WATCHED_DIRS));
    this.wanted = dirs.length;
    this.added = 0;
    for (const [dir, w] of this.watching) {
      if (!want.has(dir)) {
        w.close();
        this.watching.delete(dir);
      }
    }
    for (const dir of want) if (!this.watching.has(dir) && this.watchOne(dir)) added++;
    return added;
  }

  /**
   * Watch a directory created since the last scan (spooler.ts looks at its
   * files before the scan lists it), within MAX_WATCHED_DIRS; true when it
   * is watched now. The next sync lets it go unless the scan lists it.
   */
  add(dir: string): boolean {
    if (this.closed) return false;
    if (this.watching.has(dir)) return true;
    if (this.watching.size >= MAX_WATCHED_DIRS || !this.watchOne(dir)) return false;
    this.added++;
    return true;
  }

  private watchOne(dir: string): boolean {
    try {
      const w = watch(dir, { persistent: true }, (type, name) => this.onEvent(type === 'rename' && name ? path.join(dir, name) : null));
      w.on('error', () => {
        w.close();
        if (this.watching.get(dir) === w) this.watching.delete(dir);
        this.onEvent(null);
      });
      this.watching.set(dir, w);
      return true;
    } catch {
      // Gone since the listing, or no watch left: the rescan covers it.
      return false;
    }
  }

  /** Every directory of the last sync is watched: the periodic rescan is only the safety net. */
  get complete(): boolean {
    return !this.closed && this.watching.size === this.wanted + this.added;
  }

  close(): void {
    this.closed = true;
    for (const w of this.watching.values()) w.close();
    this.watching.clear();
  }
}
