// Reads one file from `readOffset` into a shared buffer (owned by the
// Spooler, ~1 MiB, reused for every read) and hands whole lines to the
// batcher. A partial last line is carried to the next read and is never sent
// until its newline arrives, or until the file is finished (rotated away or
// deleted), when the remainder is sent as one whole line.
//
// Memory is bounded: a carried line longer than max_line_bytes stops being
// kept; only its first max_line_bytes bytes go to the dead letter, with the
// full length.
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import type { Batcher, TrackedFileRef } from '../batcher/batcher.js';
import type { SeenStat } from '../state/store.js';
import { openRegular } from './open.js';

interface Skipping {
  start: number;
  total: number;
  head: Buffer;
}

export class FileTailer implements TrackedFileRef {
  fh: FileHandle | null = null;
  /** Next byte of the file to read. */
  readOffset: number;
  /** Bytes of an incomplete line, starting at file offset `carryStart`. */
  private carry: Buffer = Buffer.alloc(0);
  private carryStart: number;
  private skipping: Skipping | null = null;
  /** The path no longer matches (renamed out of the patterns or deleted): read to the end, then finish. */
  detached = false;
  finished = false;
  lastGrowthAt: number;
  lastSize = 0;
  lastMtimeMs = 0;
  /** [size, mtimeMs, ctimeMs] of the last stat taken while the file's identity held (checkpointed: SeenStat). */
  seen: SeenStat | null = null;

  constructor(
    public key: string,
    readonly ds: string,
    public path: string,
    startOffset: number,
    readonly dev: number,
    readonly ino: number,
    public gen: number,
    now: number,
    private readonly maxLineBytes: number,
  ) {
    this.readOffset = startOffset;
    this.carryStart = startOffset;
    this.lastGrowthAt = now;
  }

  async ensureOpen(): Promise<FileHandle | null> {
    if (this.fh) return this.fh;
    try {
      const opened = await openRegular(this.path);
      if (!opened) return null;
      this.fh = opened.fh;
      const st = opened.st;
      if (st.ino !== this.ino || st.dev !== this.dev) {
        // The path now names another file; ours is gone from it.
        await this.closeFd();
        return null;
      }
      return this.fh;
    } catch {
      return null;
    }
  }

  async closeFd(): Promise<void> {
    const fh = this.fh;
    this.fh = null;
    await fh?.close().catch(() => undefined);
  }

  /** Bytes carried (incomplete last line) — not yet handed to the batcher. */
  get carriedBytes(): number {
    return this.skipping ? this.skipping.total : this.carry.length;
  }

  /** Restart from offset 0 after a truncation (copytruncate). */
  resetTo(offset: number, key: string, gen: number): void {
    this.key = key;
    this.gen = gen;
    this.readOffset = offset;
    this.carry = Buffer.alloc(0);
    this.carryStart = offset;
    this.skipping = null;
  }

  /** Read one buffer's worth; returns the bytes read (0 at end of file). */
  async readOnce(buf: Buffer, batcher: Batcher): Promise<number> {
    // A detached file is only read through the descriptor it already has: its
    // path may now name a new file that reuses the inode (delete, then create).
    const fh = this.detached ? this.fh : await this.ensureOpen();
    if (!fh) return 0;
    const small = !this.skipping && this.carry.length <= buf.length >> 1;
    const base = small ? this.carry.length : 0;
    if (small && base > 0) this.carry.copy(buf, 0);
    const { bytesRead } = await fh.read(buf, base, buf.length - base, this.readOffset);
    if (bytesRead === 0) return 0;
    this.readOffset += bytesRead;
    if (small) {
      this.consume(buf, 0, base + bytesRead, batcher);
      return bytesRead;
    }
    // A long line is being carried or skipped: find where it ends in the new bytes.
    const nl = buf.indexOf(10);
    const lineEnd = nl === -1 || nl >= bytesRead ? -1 : nl;
    if (lineEnd === -1) {
      this.extendLong(buf.subarray(0, bytesRead), batcher);
      return bytesRead;
    }
    this.finishLong(buf.subarray(0, lineEnd + 1), batcher);
    this.consume(buf, lineEnd + 1, bytesRead, batcher);
    return bytesRead;
  }

  /** buf[from, to) starts at file offset carryStart; hand over its whole lines and carry the rest. */
  private consume(buf: Buffer, from: number, to: number, batcher: Batcher): void {
    const last = to > from ? buf.lastIndexOf(10, to - 1) : -1;
    if (last >= from) {
      batcher.append(this, buf, from, last + 1, this.carryStart);
      this.carryStart += last + 1 - from;
      from = last + 1;
    }
    this.carry = Buffer.from(buf.subarray(from, to));
    if (this.carry.length > this.maxLineBytes) this.startSkipping();
  }

  private extendLong(bytes: Buffer, batcher: Batcher): void {
    if (this.skipping) {
      this.skipping.total += bytes.length;
      return;
    }
    this.carry = Buffer.concat([this.carry, bytes]);
    if (this.carry.length > this.maxLineBytes) this.startSkipping();
    void batcher;
  }

  /** `tail` ends with the newline that ends the long line. */
  private finishLong(tail: Buffer, batcher: Batcher): void {
    if (this.skipping) {
      const s = this.skipping;
      const end = s.start + s.total + tail.length;
      let content = s.total + tail.length - 1;
      if (tail.length >= 2 && tail[tail.length - 2] === 13) content--;
      batcher.tooLong(this, s.head, content, s.start, end);
      this.skipping = null;
      this.carryStart = end;
    } else {
      const line = Buffer.concat([this.carry, tail]);
      batcher.append(this, line, 0, line.length, this.carryStart);
      this.carryStart += line.length;
    }
    this.carry = Buffer.alloc(0);
  }

  private startSkipping(): void {
    this.skipping = { start: this.carryStart, total: this.carry.length, head: Buffer.from(this.carry.subarray(0, this.maxLineBytes)) };
    this.carry = Buffer.alloc(0);
  }

  /** The file is finished (rotated away or deleted and drained): send the remainder as a whole line. */
  flushRemainder(batcher: Batcher): void {
    if (this.skipping) {
      const s = this.skipping;
      batcher.tooLong(this, s.head, s.total, s.start, s.start + s.total);
      this.skipping = null;
      this.carryStart = s.start + s.total;
    } else if (this.carry.length > 0) {
      const line = Buffer.concat([this.carry, Buffer.from('\n')]);
      // The claimed range ends one byte past the file's end (the added newline);
      // the file is finished, so nothing is ever read there.
      batcher.append(this, line, 0, line.length, this.carryStart);
      this.carryStart += line.length;
    }
    this.carry = Buffer.alloc(0);
  }
}
