// A closed batch's buffer goes back to the batcher for the next batch only
// when the batcher made it. A batch re-formed after a crash is read into a
// buffer from Node's allocation pool (Buffer.allocUnsafe), whose other bytes
// belong to other live buffers; on Node 24 that pool is 64 KiB, larger than a
// batch, and one at the pool's start was taken back: the next batch's lines
// were read over a pending journal record (kill -9 test on Node 24: "journal
// damaged (not a torn tail)", 208 bytes of spool lines in place of a file
// record, and 12 lines lost).
import { describe, expect, it } from 'vitest';
import { BatchBuffers, sharedBuffer } from '../../src/batcher/buffers.js';

/** A slice of Node's allocation pool at the pool's very start (allocations until a new pool begins). */
function pooledAtStart(bytes: number): Buffer {
  for (let i = 0; i < 10_000; i++) {
    const b = Buffer.allocUnsafe(bytes);
    if (b.byteOffset === 0 && b.buffer.byteLength > bytes) return b;
  }
  throw new Error('no pooled buffer at offset 0');
}

describe('batch buffers taken back for reuse', () => {
  it("never takes back memory it did not make: a slice of Node's pool, or of any buffer holding others' bytes", () => {
    const size = Math.floor(Buffer.poolSize / 8);
    const buffers = new BatchBuffers(size);
    const body = pooledAtStart(size);
    // Another live buffer in the same pool: a journal record waiting for its write.
    const neighbour = Buffer.allocUnsafe(16).fill(0x7b);
    expect(neighbour.buffer).toBe(body.buffer);
    buffers.recycle(body);
    const spare = buffers.takeSpare(size);
    expect(spare, 'a pool slice is not a spare').toBeNull();
    // The same for a plain ArrayBuffer shared with another view.
    const ab = new ArrayBuffer(4 * size);
    const other = Buffer.from(ab, 2 * size, 16).fill(1);
    buffers.recycle(Buffer.from(ab, 0, size));
    expect(buffers.takeSpare(size)).toBeNull();
    expect(other.every((x) => x === 1)).toBe(true);
    expect(neighbour.every((x) => x === 0x7b)).toBe(true);
  });

  it('takes back a buffer of its own (full size, over a SharedArrayBuffer) and hands it out again', () => {
    const buffers = new BatchBuffers(4096);
    const own = sharedBuffer(4096);
    buffers.recycle(own.subarray(0, 1000));
    const spare = buffers.takeSpare(4096);
    expect(spare?.buffer).toBe(own.buffer);
  });
});
