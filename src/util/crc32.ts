// CRC-32 (IEEE, the value zlib.crc32 gives) for the range checksums of every
// batch (state/progress.ts), the journal's and the retry queue's frames, the
// checkpoint and the dead-letter records.
//
// Why not zlib.crc32 alone: Node's zlib computes it with tables, ~4.5 GB/s
// here and ~2.2 GB/s on a 16-core Xeon, and every byte read from the spool
// goes through it on the main thread (0.46 of 1.41 CPU s per GB there,
// bench/README.md). @node-rs/crc32 (crc32fast, carry-less multiply) gives the
// same values ~5x faster. Where its prebuilt binary does not load (a platform
// it has none for), zlib.crc32 gives the same values: nothing written by one
// is read differently by the other.
import { createRequire } from 'node:module';
import zlib from 'node:zlib';

type Crc32 = (data: Uint8Array, value?: number) => number;

/** The fast implementation when `req` loads it, else zlib's (exported for the test of the fallback). */
export function loadCrc32(req: (id: string) => unknown = createRequire(import.meta.url)): { crc32: Crc32; impl: 'crc32fast' | 'zlib' } {
  try {
    const native = req('@node-rs/crc32') as { crc32: (data: Uint8Array, initial?: number | null) => number };
    return { crc32: (data, value = 0) => native.crc32(data, value), impl: 'crc32fast' };
  } catch {
    return { crc32: (data, value = 0) => zlib.crc32(data, value), impl: 'zlib' };
  }
}

const chosen = loadCrc32();

/** CRC-32 of `data`, continuing from `value` (the CRC of the bytes before it). */
export const crc32: Crc32 = chosen.crc32;

/** Which implementation computes it (the start log's `crc32`). */
export const crc32Impl: 'crc32fast' | 'zlib' = chosen.impl;

// Combining two CRCs: zlib's crc32_combine (1.2.12's x^(8n) mod P method),
// which Node does not expose. A range's CRC is taken in a reader thread
// chunk by chunk from 0 (spool/scan-reader.ts); the main thread joins each
// chunk's to the range's without touching the bytes.
const POLY = 0xedb88320;

/** a(x) * b(x) modulo the CRC-32 polynomial (reflected, bit 31 is x^0). */
function multModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** x^(2^k) mod P for k = 0..31. */
const X2N: number[] = (() => {
  const t: number[] = [];
  let p = 0x40000000; // x^1
  t.push(p);
  for (let k = 1; k < 32; k++) t.push((p = multModP(p, p)));
  return t;
})();

/** x^(n * 2^k) mod P. */
function x2nModP(n: number, k: number): number {
  let p = 0x80000000; // x^0
  while (n > 0) {
    if (n % 2 === 1) p = multModP(X2N[k & 31]!, p);
    n = Math.floor(n / 2);
    k++;
  }
  return p;
}

/** The CRC-32 of A followed by B, from crc32(A), crc32(B) and B's length in bytes. */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  return (multModP(x2nModP(lengthB, 3), crcA) ^ crcB) >>> 0;
}
