// In-memory progress of every tracked file: which byte ranges belong to
// which batch, which are done, and the committed offset.
//
// Invariant (docs/guarantees.md rule 1): a file's committed offset only moves forward past
// bytes that are acknowledged, durably queued, or durably dead-lettered. The
// tailer hands bytes over in file order and every byte is claimed (by a batch,
// including skipped empty lines, or by a dead letter), so a file's ranges are
// contiguous from `committed` on; the committed offset is the start of the
// first range that is not done.
import { crc32, crc32Combine } from '../util/crc32.js';
import type { FileMeta, IntentRange } from './journal.js';

/** Owner of a range that is not part of a batch (a dead-lettered line). */
export const DEAD_LETTER_OWNER = -1;

export interface RangeEntry {
  key: string;
  start: number;
  end: number;
  owner: number;
  done: boolean;
  /** True once the owner's intent (or the dead letter) is durable in the journal. */
  recorded: boolean;
  /** CRC-32 of the bytes a batch took from the range, when they were given (journal.ts IntentRange). */
  crc?: number;
}

export interface FileProgress {
  meta: FileMeta;
  /** Offset before which everything is done. */
  committed: number;
  /** Not-done or not-yet-popped ranges, in file order, starting at `committed`. */
  entries: RangeEntry[];
}

/** The CRC-32 of `length` claimed bytes, taken by whoever read them. */
export interface BytesCrc {
  crc: number;
  length: number;
}

export class Progress {
  readonly files = new Map<string, FileProgress>();
  private readonly byOwner = new Map<number, RangeEntry[]>();

  addFile(meta: FileMeta, committed: number): FileProgress {
    const fp: FileProgress = { meta, committed, entries: [] };
    this.files.set(meta.key, fp);
    return fp;
  }

  /**
   * Claim [start, end) of a file for `owner`. Extends the owner's last range
   * when contiguous, but only when it is also the owner's latest range: the
   * ranges of a batch are in body order (re-forming reads them in that
   * order), and a batch that took lines of another file in between must get
   * a range of its own (a1, b1, a2 is not a1, a2, b1). `bytes`, the claimed
   * bytes as the batch took them (or their CRC, taken where they were read:
   * spool/scan-reader.ts), go into the range's CRC.
   */
  claim(key: string, start: number, end: number, owner: number, bytes?: Uint8Array | BytesCrc): RangeEntry {
    const fp = this.mustGet(key);
    const last = fp.entries[fp.entries.length - 1];
    if (last && last.owner === owner && last.end === start && !last.done && owner !== DEAD_LETTER_OWNER && this.byOwner.get(owner)?.at(-1) === last) {
      last.end = end;
      if (bytes && last.crc !== undefined) last.crc = bytes instanceof Uint8Array ? crc32(bytes, last.crc) : crc32Combine(last.crc, bytes.crc, bytes.length);
      else delete last.crc;
      return last;
    }
    const entry: RangeEntry = { key, start, end, owner, done: false, recorded: false };
    if (bytes && owner !== DEAD_LETTER_OWNER) entry.crc = bytes instanceof Uint8Array ? crc32(bytes) : bytes.crc;
    fp.entries.push(entry);
    if (owner !== DEAD_LETTER_OWNER) {
      let list = this.byOwner.get(owner);
      if (!list) this.byOwner.set(owner, (list = []));
      list.push(entry);
    }
    return entry;
  }

  /** The ranges of a batch, for its intent record. */
  rangesOf(owner: number): IntentRange[] {
    return (this.byOwner.get(owner) ?? []).map((e) => ({ file: e.key, start: e.start, end: e.end, ...(e.crc !== undefined ? { crc: e.crc } : {}) }));
  }

  markRecorded(owner: number): void {
    for (const e of this.byOwner.get(owner) ?? []) e.recorded = true;
  }

  /** Mark every range of a batch done; returns the keys of files whose committed offset moved. */
  markOwnerDone(owner: number): string[] {
    const entries = this.byOwner.get(owner);
    this.byOwner.delete(owner);
    if (!entries) return [];
    const moved = new Set<string>();
    for (const e of entries) {
      e.done = true;
      const fp = this.files.get(e.key);
      if (fp && this.advance(fp)) moved.add(e.key);
    }
    return [...moved];
  }

  markEntryDone(key: string, entry: RangeEntry): boolean {
    entry.done = true;
    entry.recorded = true;
    return this.advance(this.mustGet(key));
  }

  private advance(fp: FileProgress): boolean {
    let n = 0;
    while (n < fp.entries.length && fp.entries[n]!.done) n++;
    if (n === 0) return false;
    fp.committed = fp.entries[n - 1]!.end;
    fp.entries.splice(0, n);
    return true;
  }

  /** Register recovered entries (from a checkpoint or journal) under their owners. */
  adoptEntries(entries: RangeEntry[]): void {
    for (const e of entries) {
      if (e.owner === DEAD_LETTER_OWNER || e.done) continue;
      let list = this.byOwner.get(e.owner);
      if (!list) this.byOwner.set(e.owner, (list = []));
      list.push(e);
    }
  }


  forget(key: string): void {
    this.files.delete(key);
  }

  private mustGet(key: string): FileProgress {
    const fp = this.files.get(key);
    if (!fp) throw new Error(`unknown file key ${key}`);
    return fp;
  }
}
