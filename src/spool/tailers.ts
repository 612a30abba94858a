// The files being followed: one FileTailer per file generation, by key,
// and the newest tailer of each inode (a scan looks every path up by
// device and inode). Outside the spool they are read through TailerView and
// the questions below, never changed.
//
// "Followed" has one meaning, `followed()` below: a tailer from its
// discovery until it is finished (read to its end after being renamed
// away or deleted). A finished tailer stays here only until completion.ts
// forgets it (or a scan finds it come back): `size` counts it, the
// questions about followed files do not.
import type { SeenStat } from '../state/store.js';
import type { FileTailer } from './tailer.js';

/** What the rest of the agent may read of a followed file. */
export interface TailerView {
  readonly key: string;
  readonly ds: string;
  readonly path: string;
  readonly ino: number;
  readonly lastSize: number;
  readonly readOffset: number;
  readonly detached: boolean;
  readonly finished: boolean;
  readonly seen: SeenStat | null;
}

export class Tailers {
  private readonly byKey = new Map<string, FileTailer>();
  /** dev:ino -> the newest tailer of that inode. */
  private readonly byInode = new Map<string, FileTailer>();

  get(key: string): FileTailer | undefined {
    return this.byKey.get(key);
  }

  has(key: string): boolean {
    return this.byKey.has(key);
  }

  values(): IterableIterator<FileTailer> {
    return this.byKey.values();
  }

  /** Tailers held, finished ones waiting to be forgotten included (memory: the state's size). */
  get size(): number {
    return this.byKey.size;
  }

  /** Files followed now (see followed()). */
  get followedCount(): number {
    let n = 0;
    for (const t of this.byKey.values()) if (followed(t)) n++;
    return n;
  }

  /** A copy, for loops that add or remove tailers. */
  list(): FileTailer[] {
    return [...this.byKey.values()];
  }

  /** The newest tailer of this inode. */
  ofInode(dev: number, ino: number): FileTailer | undefined {
    return this.byInode.get(`${dev}:${ino}`);
  }

  add(t: FileTailer): void {
    this.byKey.set(t.key, t);
    const id = `${t.dev}:${t.ino}`;
    const cur = this.byInode.get(id);
    if (!cur || cur === t || cur.gen <= t.gen) this.byInode.set(id, t);
  }

  remove(t: FileTailer): void {
    this.byKey.delete(t.key);
    const id = `${t.dev}:${t.ino}`;
    if (this.byInode.get(id) === t) this.byInode.delete(id);
  }

  /** Descriptors held now. */
  get openDescriptors(): number {
    let n = 0;
    for (const t of this.byKey.values()) if (t.fh) n++;
    return n;
  }

  /** Every file of `ds` read to its known end (the end-of-backlog rule asks). */
  caughtUp(ds: string): boolean {
    for (const t of this.byKey.values()) {
      if (t.ds === ds && followed(t) && (t.lastSize > t.readOffset || (t.detached && !t.endSeen))) return false;
    }
    return true;
  }

  /** spoolship_behind_bytes: per Data Source, the bytes of its files past their committed offset (the read offset when the state has none). */
  behindBytes(committedOf: (key: string) => number | undefined): Map<string, number> {
    const behind = new Map<string, number>();
    for (const t of this.byKey.values()) {
      behind.set(t.ds, (behind.get(t.ds) ?? 0) + Math.max(0, t.lastSize - (committedOf(t.key) ?? t.readOffset)));
    }
    return behind;
  }

  /** Is the file at `path` with inode `ino` being followed (discovered, not finished)? */
  isFollowing(path: string, ino: number): boolean {
    for (const t of this.byKey.values()) if (followed(t) && t.path === path && t.ino === ino) return true;
    return false;
  }
}

/** Followed: discovered and not finished. */
export function followed(t: Pick<FileTailer, 'finished'>): boolean {
  return !t.finished;
}

/**
 * Where idle_ms counts from: the file's last growth, or its move out of the
 * patterns, whichever came later. logrotate renames a file its writer still
 * holds: one idle before the rename is still written to until the writer
 * reopens, so the rename starts the count again (docs/spool.md "Rotation";
 * counted from the last growth, a file idle before it was finished, its half
 * line sent split, the moment the rename was seen, and with on_complete:
 * delete, deleted).
 */
export function quietSince(t: Pick<FileTailer, 'lastGrowthAt' | 'goneSince'>): number {
  return Math.max(t.lastGrowthAt, t.goneSince ?? Number.NEGATIVE_INFINITY);
}
