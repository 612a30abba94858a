// Reused buffers for compressed bodies.
//
// The zstd binding hands each compressed body back as native memory that is
// freed only when V8 collects the small JS object in front of it. A body is
// held for its request's lifetime (tens of ms to seconds), long enough for
// that object to be promoted out of the young generation; the memory then
// waits for a full collection, which V8 starts only after ~64 MB of such
// external memory has piled up (bench/README.md, finding 21). Copying the body
// into a buffer of ours at once (~1.7 MB per 10 MB batch at zstd 3) lets the
// binding's object die young, and our buffer is handed back, by the pipeline,
// once the batch is done: delivered, or written to the disk queue.

/** Capacities are rounded up to this, so that bodies of similar sizes share buffers. */
const GRAIN = 256 * 1024;

export class BodyPool {
  private readonly free: Buffer[] = [];
  /** Buffers out on loan: only these are taken back, once each. */
  private readonly lent = new Set<ArrayBuffer>();

  /** `keep`: how many free buffers to hold at most (the rest go to the GC). */
  constructor(private readonly keep: number) {}

  /** The buffers of `src` one after another, copied into a buffer of the pool. */
  copy(src: Buffer[]): Buffer {
    const length = src.reduce((n, b) => n + b.length, 0);
    const at = this.free.findIndex((b) => b.length >= length);
    let buf: Buffer;
    if (at >= 0) {
      buf = this.free.splice(at, 1)[0]!;
    } else {
      buf = Buffer.allocUnsafeSlow(Math.max(GRAIN, Math.ceil(length / GRAIN) * GRAIN));
    }
    this.lent.add(buf.buffer as ArrayBuffer);
    let pos = 0;
    for (const b of src) pos += b.copy(buf, pos);
    return buf.subarray(0, length);
  }

  /** Hand back a body made by copy(); anything else, or a second release, is ignored. The caller must no longer use it. */
  release(body: Buffer): void {
    const ab = body.buffer as ArrayBuffer;
    if (!this.lent.delete(ab) || this.free.length >= this.keep) return;
    this.free.push(Buffer.from(ab, 0, ab.byteLength));
  }

  get spare(): number {
    return this.free.length;
  }
}
