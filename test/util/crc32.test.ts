// The range checksums, the journal's and the queue's frames are CRC-32 as
// zlib.crc32 computes it, whichever implementation computes it: state written
// with one is read by the other (util/crc32.ts).
import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { crc32, crc32Combine, crc32Impl, loadCrc32 } from '../../src/util/crc32.js';

const samples = [Buffer.alloc(0), Buffer.from('{"a":1}\n'), randomBytes(457), randomBytes(65_537), randomBytes(3 * 1024 * 1024 + 5)];

describe('crc32', () => {
  it('is the fast implementation on the platforms CI runs (its prebuilt binary is installed by npm ci)', () => {
    expect(crc32Impl).toBe('crc32fast');
  });

  for (const [name, impl] of [
    ['the exported one', crc32],
    ['the fallback when the binary does not load', loadCrc32(() => {
      throw new Error('Cannot find module @node-rs/crc32-linux-x64-gnu');
    }).crc32],
  ] as const) {
    it(`${name} gives zlib.crc32's values, continued from a previous value too`, () => {
      for (const s of samples) {
        expect(impl(s)).toBe(zlib.crc32(s));
        const cut = Math.floor(s.length / 3);
        expect(impl(s.subarray(cut), impl(s.subarray(0, cut)))).toBe(zlib.crc32(s));
      }
    });
  }

  it('falls back to zlib when the binary does not load', () => {
    expect(loadCrc32(() => {
      throw new Error('no binary');
    }).impl).toBe('zlib');
  });

  it('combines the CRCs of two pieces into the CRC of both', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.uint8Array({ maxLength: 3000 }), (a, b) => {
        // (Not zlib.crc32(b, zlib.crc32(a)): Node's zlib gives 0 for an empty array with no memory behind it, whatever the value.)
        expect(crc32Combine(crc32(a), crc32(b), b.length)).toBe(zlib.crc32(Buffer.concat([a, b])));
      }),
    );
    const big = randomBytes(3 * 1024 * 1024 + 5);
    const cut = 12_345;
    expect(crc32Combine(crc32(big.subarray(0, cut)), crc32(big.subarray(cut)), big.length - cut)).toBe(zlib.crc32(big));
  });
});
