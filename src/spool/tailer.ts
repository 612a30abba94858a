// Reads one file from `readOffset` into a shared buffer (owned by the
// Spooler, ~1 MiB, reused for every read) and hands whole lines to the
// batcher; what is known of the file besides (path, detached, sizes) is in
// followed-file.ts. A partial last line is never sent until its newline
// arrives, or until the file is finished (renamed away and idle for
// idle_ms, or deleted), when the remainder is sent as one whole line.
//
// Memory is bounded per file, whatever the partial line's size: a partial
// line of up to CARRY_IN_MEMORY_BYTES is kept (cheap, and a file deleted
// after its descriptor was closed still ships it); a longer one is kept as
// its start offset only, read again from the file when its newline arrives
// (40 files each ending in a 9 MB unfinished line once took 430 MB of RSS).
// While such a line is pending the descriptor stays open (`pinned`), so the
// bytes can be read back even if the file is deleted (read-loop.ts keeps it
// for a short one too). A line over max_line_bytes goes to the dead letters
// with its first max_line_bytes bytes and its length: at its end, or, when
// a read finds the end of what is written inside it, then, with the length
// read so far (`lettered`: its bytes are passed at its end, once).
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import type { Batcher, TrackedFileRef } from '../batcher/batcher.js';
import type { ChunkLook } from '../batcher/lines.js';
import { FollowedFile } from './followed-file.js';
import { LastBytes, readAt } from './offset-reads.js';
import { openRegularOrRefused } from './open.js';
import { READ_HERE, type ChunkReader, type ChunkScan, type ScanRequest } from './scan-reader.js';

/** A partial line up to this size is kept in memory; a longer one only as its start offset. */
export const CARRY_IN_MEMORY_BYTES = 16 * 1024;

export class FileTailer extends FollowedFile implements TrackedFileRef {
  fh: FileHandle | null = null;
  /**
   * The incomplete last line is file[carryStart, readOffset). `carry` holds
   * those bytes when they are at most CARRY_IN_MEMORY_BYTES, else it is empty
   * and they are read again from the file.
   */
  private carry: Buffer = Buffer.alloc(0);
  private carryStart: number;
  /** The incomplete line is already longer than max_line_bytes: it goes to the dead letters (see `lettered`). */
  private skipping = false;
  /** Where a too-long line starts whose record was written before its end (readOnce): at its end only its bytes are passed. */
  #lettered: number | null;
  /** The last read stopped at the end of what is written. */
  #atEnd = false;
  /** What was read just before readOffset, checked by the next read (offset-reads.ts). */
  private readonly before = new LastBytes();
  /** A read found those bytes changed: nothing more is read until the scan starts it again from 0 (discovery.ts). */
  changedUnder = false;
  /** The read of a chunk through `fh`'s descriptor not yet answered (closeFd waits for it). */
  #reading: Promise<unknown> | null = null;

  constructor(
    public key: string,
    readonly ds: string,
    path: string,
    startOffset: number,
    readonly dev: number,
    readonly ino: number,
    public gen: number,
    now: number,
    private readonly maxLineBytes: number,
    /** The state's record of a too-long line already dead-lettered (FileMeta.lettered): counts only where reading starts. */
    lettered?: number,
  ) {
    super(path, startOffset, now);
    this.#lettered = lettered === startOffset ? lettered : null;
    this.carryStart = startOffset;
  }


  async ensureOpen(): Promise<FileHandle | null> {
    if (this.fh) return this.fh;
    try {
      const opened = await openRegularOrRefused(this.path);
      if (!opened) return null;
      if ('refused' in opened) {
        // chmod 000 for a while, a wrong owner after a restore: not gone, so nothing is finished or forgotten.
        this.refused(opened.refused);
        return null;
      }
      this.refused(null);
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
    // A read by descriptor number (another thread's) must end before the
    // number can name another file.
    await this.#reading?.catch(() => undefined);
    await fh?.close().catch(() => undefined);
  }

  /** Bytes of the incomplete last line: read, not yet handed to the batcher. */
  get carriedBytes(): number {
    return this.readOffset - this.carryStart;
  }

  /** Bytes of the incomplete last line held in memory (at most CARRY_IN_MEMORY_BYTES). */
  get heldBytes(): number {
    return this.carry.length;
  }

  /** A long partial line is pending: its bytes are read back through this descriptor, so keep it open. */
  get pinned(): boolean {
    return this.carriedBytes > this.carry.length;
  }

  /** Restart from offset 0 after a truncation (copytruncate). */
  resetTo(offset: number, key: string, gen: number): void {
    this.key = key;
    this.gen = gen;
    this.readOffset = offset;
    this.carry = Buffer.alloc(0);
    this.carryStart = offset;
    this.skipping = false;
    this.#lettered = null;
    this.before.clear();
    this.changedUnder = false;
  }

  /**
   * Read one buffer's worth; returns the new bytes read (0 at end of file).
   * A line past max_line_bytes goes to the dead letters as soon as a read
   * finds the end of what is written inside it (README "Delivery
   * guarantee"), with what was read of it; a line written whole is read to
   * its newline first, so its record has its whole length.
   */
  async readOnce(buf: Buffer, batcher: Batcher, reader: ChunkReader = READ_HERE): Promise<number> {
    const n = await this.readNext(buf, batcher, reader);
    const start = this.carryStart;
    if (this.skipping && this.fh && !this.changedUnder && this.#lettered !== start && (this.#atEnd || (await this.fh.stat()).size <= this.readOffset)) {
      this.#lettered = start;
      batcher.tooLongSoFar(this, await readAt(this.fh, start, this.maxLineBytes), this.readOffset - start, start);
    }
    return n;
  }

  private async readNext(buf: Buffer, batcher: Batcher, reader: ChunkReader): Promise<number> {
    this.#atEnd = true;
    // A detached file is only read through the descriptor it already has: its
    // path may now name a new file that reuses the inode (delete, then create).
    const fh = this.detached ? this.fh : await this.ensureOpen();
    if (!fh) return 0;
    if (!this.pinned) {
      // A short partial line (in memory) goes in front of the new bytes,
      // read straight into the open batch's buffer where the batcher lends
      // it (no copy of the lines then), else into the read loop's buffer.
      const base = this.carry.length;
      const lent = batcher.borrow(this.ds, base, this.unreadBytes);
      const into = lent?.buf ?? buf;
      const at = lent?.at ?? 0;
      const end = at + (lent ? Math.min(lent.room, base + buf.length) : buf.length);
      try {
        if (base > 0) this.carry.copy(into, at);
        // The look's search and CRC are worth it only where the batcher uses
        // them: off this thread, or a chunk read into the batch's own buffer
        // (it fits the batch). A chunk in the reader's buffer may be cut by a
        // closing batch, whose parts the batcher searches itself: here the
        // look would search it twice (a maxLen of -1 stops at the first line).
        const looks = lent !== null || reader.where === 'thread';
        const scan = await this.readChunk(reader, { fd: fh.fd, buf: into, at: at + base, length: end - at - base, position: this.readOffset, scanFrom: at, maxLen: looks ? batcher.plainLineLimit : -1, before: this.before.get() });
        if (scan.changed) this.changedUnder = true;
        this.#atEnd = scan.bytesRead < end - at - base;
        if (scan.bytesRead === 0) return 0;
        this.readOffset += scan.bytesRead;
        this.before.keep(into, at, at + base + scan.bytesRead);
        this.consume(into, at, at + base + scan.bytesRead, batcher, scan.lastNewline, looks ? scan : undefined);
        return scan.bytesRead;
      } finally {
        if (lent) batcher.giveBack(lent);
      }
    }
    // A long partial line: look for its end in the new bytes only.
    if (!(await this.before.stillBefore(fh, this.readOffset))) {
      this.changedUnder = true;
      return 0;
    }
    const { bytesRead } = await fh.read(buf, 0, buf.length, this.readOffset);
    this.#atEnd = bytesRead < buf.length;
    if (bytesRead === 0) return 0;
    this.before.keep(buf, 0, bytesRead);
    const nl = buf.indexOf(10);
    const lineEnd = nl === -1 || nl >= bytesRead ? -1 : nl;
    const at = this.readOffset;
    this.readOffset += bytesRead;
    if (lineEnd === -1) {
      if (this.carriedBytes > this.maxLineBytes) this.skipping = true;
      return bytesRead;
    }
    await this.finishLong(fh, at + lineEnd + 1, batcher);
    this.consume(buf, lineEnd + 1, bytesRead, batcher);
    return bytesRead;
  }

  private async readChunk(reader: ChunkReader, req: ScanRequest): Promise<ChunkScan> {
    const reading = reader.read(req);
    this.#reading = reading;
    try {
      return await reading;
    } finally {
      this.#reading = null;
    }
  }

  /**
   * buf[from, to) starts at file offset carryStart and ends at readOffset;
   * hand over its whole lines and keep the rest's offset. `last`: the
   * last newline in it (-1: none), when the reader found it; `look`: the
   * reader's look at buf[from, to), passed on to the batcher.
   */
  private consume(buf: Buffer, from: number, to: number, batcher: Batcher, last = to > from ? buf.lastIndexOf(10, to - 1) : -1, look?: ChunkLook): void {
    if (last >= from && this.#lettered === this.carryStart) {
      // A restart inside the line whose record was written: only its bytes are passed.
      const nl = buf.indexOf(10, from);
      batcher.tooLong(this, null, nl - from, this.carryStart, this.carryStart + nl + 1 - from);
      this.carryStart += nl + 1 - from;
      from = nl + 1;
      look = undefined;
    }
    if (last >= from) {
      batcher.append(this, buf, from, last + 1, this.carryStart, look);
      this.carryStart += last + 1 - from;
      from = last + 1;
    }
    const rest = to - from;
    this.skipping = rest > this.maxLineBytes;
    this.carry = rest > 0 && rest <= CARRY_IN_MEMORY_BYTES && !this.skipping ? Buffer.from(buf.subarray(from, to)) : Buffer.alloc(0);
  }

  /** The long line file[carryStart, end) is complete (file[end - 1] is its newline): hand it over, read again from the file. */
  private async finishLong(fh: FileHandle, end: number, batcher: Batcher): Promise<void> {
    const start = this.carryStart;
    // A line lettered before a restart stays lettered under a raised max_line_bytes.
    if (this.skipping || this.#lettered === start) {
      let content = end - start - 1;
      const lettered = this.#lettered === start;
      const [head, cr] = await Promise.all([lettered ? null : readAt(fh, start, Math.min(this.maxLineBytes, content)), content > 0 ? readAt(fh, end - 2, 1) : null]);
      if (cr?.[0] === 13) content--;
      batcher.tooLong(this, head, content, start, end);
    } else {
      const line = await readAt(fh, start, end - start);
      batcher.append(this, line, 0, line.length, start);
    }
    this.skipping = false;
    this.carry = Buffer.alloc(0);
    this.carryStart = end;
  }

  /** The file is finished (rotated away or deleted and drained): send the remainder as a whole line. */
  async flushRemainder(batcher: Batcher): Promise<void> {
    const start = this.carryStart;
    const len = this.carriedBytes;
    if (len === 0) return;
    if (this.skipping || this.#lettered === start) {
      const head = this.#lettered === start ? null : this.fh ? await readAt(this.fh, start, Math.min(this.maxLineBytes, len)) : Buffer.alloc(0);
      batcher.tooLong(this, head, len, start, start + len);
    } else {
      // Pinned lines are read back through the descriptor that stayed open.
      const text = this.carry.length === len ? this.carry : this.fh ? await readAt(this.fh, start, len) : this.carry;
      // Sent with a newline; claimed (and committed) to the file's end only.
      batcher.append(this, text, 0, text.length, start);
    }
    this.skipping = false;
    this.carry = Buffer.alloc(0);
    this.carryStart = this.readOffset;
  }
}
