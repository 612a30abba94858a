// What is known of a followed file besides its read (tailer.ts): where it
// is, whether it left the matching paths or was deleted, its size and
// mtime as last seen, when it last grew, whether it can be opened. It
// changes only through these methods (the read loop, the scan and the
// rotation logic call them); the tailer adds the read itself.
import type { SeenStat } from '../state/store.js';

export class FollowedFile {
  /** Next byte of the file to read. */
  readOffset: number;
  /** How it left the matching paths: renamed (its path changed since), or matched no more where it is (a config change). */
  #detached: false | 'renamed' | 'unmatched' = false;
  /** Detached and deleted (no link left): finished once unwritten for idle_ms (read-loop.ts), its remainder sent whole. */
  #deleted = false;
  /** A read has found the end since the file was detached or last grew (a detached file's size is known only through its descriptor). */
  #endSeen = false;
  #finished = false;
  /** When a scan last stopped finding it at a matching path (null while it is at one). */
  #goneSince: number | null = null;
  #lastGrowthAt: number;
  #lastSize = 0;
  #lastMtimeMs = 0;
  #seen: SeenStat | null = null;
  #path: string;
  /** The errno of the last open refused for permissions (EACCES, EPERM); null once it opens. */
  #unreadable: string | null = null;
  /** #unreadable as last reported (readabilityChange): one WARN per streak. */
  #reportedUnreadable: string | null = null;

  constructor(path: string, readOffset: number, now: number) {
    this.#path = path;
    this.readOffset = readOffset;
    this.#lastGrowthAt = now;
  }

  /** Where the file is now (it follows renames). */
  get path(): string {
    return this.#path;
  }

  /** The path no longer matches (renamed away, deleted, or a new config): read through the descriptor until idle for idle_ms, then finished. */
  get detached(): boolean {
    return this.#detached !== false;
  }

  /** Detached by a rename out of the patterns (not by a config that matches it no more): on_complete: delete may delete it. */
  get renamedAway(): boolean {
    return this.#detached === 'renamed';
  }

  /** Detached and its last link removed: nobody can reopen it, so a stop sends its remainder (spooler.ts). */
  get deleted(): boolean {
    return this.#deleted;
  }

  /** When it left the matching paths (forget_after_ms counts from here), or null. */
  get goneSince(): number | null {
    return this.#goneSince;
  }

  /** A read found no more bytes since the file was detached or last grew. */
  get endSeen(): boolean {
    return this.#endSeen;
  }

  /** Detached and read to its end once idle (or deleted), or deleted by on_complete: delete: nothing more is read. */
  get finished(): boolean {
    return this.#finished;
  }

  /** When a read last found new bytes. */
  get lastGrowthAt(): number {
    return this.#lastGrowthAt;
  }

  /** The file's size as last seen (a stat, or the end of a read). */
  get lastSize(): number {
    return this.#lastSize;
  }

  get lastMtimeMs(): number {
    return this.#lastMtimeMs;
  }

  /** [size, mtimeMs, ctimeMs] of the last stat taken while the file's identity held (checkpointed: SeenStat). */
  get seen(): SeenStat | null {
    return this.#seen;
  }

  /** The file was found at another path (a rename). */
  moveTo(path: string): void {
    this.#path = path;
  }

  detach(now: number, how: 'renamed' | 'unmatched'): void {
    this.#detached = how;
    this.#endSeen = false;
    this.#goneSince = now;
  }

  /** Back at a matching path (renamed back, or seen again after a failed look). */
  reattach(): void {
    this.#detached = false;
    this.#deleted = false;
    this.#goneSince = null;
  }

  /** Finished, then back at a matching path within forget_after_ms (same inode and first bytes): read on from where it was. */
  revive(): void {
    this.#finished = false;
    this.#endSeen = false;
    this.reattach();
  }

  /** Deleted by the agent (on_complete: delete): it cannot come back. */
  markDeleted(): void {
    this.#deleted = true;
  }

  /** A stat through the descriptor of a detached file (its name is not listed any more). */
  sawDetachedStat(st: { size: number; mtimeMs: number; ctimeMs: number; nlink: number }): void {
    if (st.size > this.#lastSize) this.#endSeen = false;
    this.sawStat(st, false);
    this.#deleted = st.nlink === 0;
  }

  finish(): void {
    this.#finished = true;
  }

  /** A stat of the file; `identityHeld`: taken while its identity was checked (becomes `seen`). */
  sawStat(st: { size: number; mtimeMs: number; ctimeMs: number }, identityHeld = true, mtimeMs = st.mtimeMs): void {
    this.#lastSize = st.size;
    this.#lastMtimeMs = mtimeMs;
    if (identityHeld) this.#seen = [st.size, st.mtimeMs, st.ctimeMs];
  }

  /** A read found new bytes at `now`. */
  grew(now: number): void {
    this.#lastGrowthAt = now;
    this.#endSeen = false;
    if (this.readOffset > this.#lastSize) this.#lastSize = this.readOffset;
  }

  /** A read found no new bytes: the file ends where reading stands (if it shrank, the next scan decides: truncation). */
  readToEnd(): void {
    this.#lastSize = this.readOffset;
    this.#endSeen = true;
  }

  /** Bytes known to be in the file and not yet read. */
  get unreadBytes(): number {
    return Math.max(0, this.#lastSize - this.readOffset);
  }

  /** The errno (EACCES, EPERM) while the file cannot be opened for its permissions; its progress is kept and every read tries again. */
  get unreadable(): string | null {
    return this.#unreadable;
  }

  /** 'unreadable' or 'readable' once per change of `unreadable` (its first refusal, its first open after), else null. */
  readabilityChange(): 'unreadable' | 'readable' | null {
    if (this.#unreadable === this.#reportedUnreadable) return null;
    const was = this.#reportedUnreadable;
    this.#reportedUnreadable = this.#unreadable;
    if (this.#unreadable === null) return 'readable';
    return was === null ? 'unreadable' : null;
  }

  /** An open refused for permissions (its errno), or null once one succeeds. */
  protected refused(errno: string | null): void {
    this.#unreadable = errno;
  }
}
