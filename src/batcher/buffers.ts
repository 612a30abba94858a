// The batcher's uncompressed buffers: the spares kept for reuse once a batch
// is compressed, the buffers lent to a read (Batcher.borrow), and the one
// fresh buffer lent for a Data Source that has no open batch yet.
//
// Why lending: the tailer reads a backlog straight into the open batch's
// buffer, so the lines are already where the batch wants them and nothing is
// copied (that copy was 0.1 of the main thread's ~1 CPU s per GB on 16
// cores). A buffer a read is still filling is never handed to anyone else: a
// batch can close (linger_ms) and be compressed while its buffer is lent.

/**
 * A buffer over a SharedArrayBuffer: the reader thread reads into batch
 * buffers and the read loop's (spool/scan-reader.ts), and it can only fill
 * memory it shares with the main thread.
 */
export function sharedBuffer(bytes: number): Buffer {
  return Buffer.from(new SharedArrayBuffer(bytes));
}

/** Uncompressed batch buffers kept for reuse once compressed: saves a 10 MB allocation (and its GC) per batch. */
const SPARE_BUFFERS = 2;

export class BatchBuffers {
  private readonly spare: Buffer[] = [];
  /** Buffers a read is filling or whose bytes are being appended (lend to giveBack). */
  private readonly lent = new Set<ArrayBufferLike>();
  /** A full-size buffer lent for a Data Source without an open batch: the batch it opens next adopts it. One at most. */
  private unopened: { ds: string; buf: Buffer } | null = null;

  constructor(private readonly fullBytes: number) {}

  /** A spare of at least `need` bytes, or null. */
  takeSpare(need: number): Buffer | null {
    const at = this.spare.findIndex((x) => x.length >= need);
    return at >= 0 ? this.spare.splice(at, 1)[0]! : null;
  }

  /** A closed batch's buffer whose body is no longer needed (compressed). */
  recycle(body: Buffer): void {
    // Only memory the batcher made (sharedBuffer: a SharedArrayBuffer of its
    // own). Any other (a batch re-formed after a crash is read into
    // Buffer.allocUnsafe memory) may be a slice of Node's allocation pool,
    // whose other bytes belong to other live buffers: 64 KiB on Node 24,
    // larger than a batch, so its size did not tell, and a pool taken back
    // had spool lines read over a journal record waiting for its write. Nor
    // a buffer a read is still filling.
    const ab = body.buffer;
    if (!(ab instanceof SharedArrayBuffer) || body.byteOffset !== 0 || ab.byteLength < this.fullBytes || this.spare.length >= SPARE_BUFFERS || this.lent.has(ab)) return;
    this.spare.push(Buffer.from(ab, 0, ab.byteLength));
  }

  /** The full-size buffer for `ds`'s next batch: the one already lent for it, else a spare or a new one. */
  freshFor(ds: string): Buffer {
    const u = this.unopened;
    if (u && (u.ds === ds || !this.lent.has(u.buf.buffer))) {
      u.ds = ds;
      return u.buf;
    }
    const buf = this.takeSpare(this.fullBytes) ?? sharedBuffer(this.fullBytes);
    // The one before, if a read still fills it, is left to that read (and then to the GC).
    this.unopened = { ds, buf };
    return buf;
  }

  /** `src` when it is the fresh buffer of `ds` (it is adopted: the batch owns it now), else null. */
  adopt(ds: string, src: Buffer | undefined): Buffer | null {
    if (src === undefined || this.unopened?.buf !== src || this.unopened.ds !== ds) return null;
    this.unopened = null;
    return src;
  }

  /** Lend `buf` to a read; false when a read has it already. */
  lend(buf: Buffer): boolean {
    if (this.lent.has(buf.buffer)) return false;
    this.lent.add(buf.buffer);
    return true;
  }

  giveBack(buf: Buffer): void {
    this.lent.delete(buf.buffer);
  }
}
