// How large a zstd body can decode to, read from its frame and block headers
// without decompressing anything. A 30 KB zstd "bomb" once took the emulator
// to 1 GB of RSS, because the zstd binding decodes a body whole before its
// size can be checked (gzip stops at a cap; the binding has no such option).
//
// Frame layout (RFC 8878): magic 0xFD2FB528, frame header (descriptor,
// optional window descriptor, dictionary id, content size), then blocks of
// a 3-byte header (last flag, type, size): raw blocks decode to their size,
// RLE blocks to their size from one byte, compressed blocks to at most
// BLOCK_MAX_BYTES. Skippable frames (magic 0x184D2A5?) decode to nothing.

/** A compressed block decodes to at most 128 KiB. */
export const BLOCK_MAX_BYTES = 128 * 1024;
const ZSTD_MAGIC = 0xfd2fb528;

export type ZstdBound = { ok: true; maxBytes: number; frames: number } | { ok: false; why: string };

export function zstdDecodedBound(buf: Buffer): ZstdBound {
  let pos = 0;
  let total = 0;
  let frames = 0;
  while (pos < buf.length) {
    if (pos + 4 > buf.length) return { ok: false, why: 'truncated frame magic' };
    const magic = buf.readUInt32LE(pos);
    if ((magic & 0xfffffff0) === 0x184d2a50) {
      if (pos + 8 > buf.length) return { ok: false, why: 'truncated skippable frame' };
      pos += 8 + buf.readUInt32LE(pos + 4);
      continue;
    }
    if (magic !== ZSTD_MAGIC) return { ok: false, why: 'not a zstd frame' };
    pos += 4;
    if (pos >= buf.length) return { ok: false, why: 'truncated frame header' };
    const fhd = buf[pos++]!;
    const fcsFlag = fhd >> 6;
    const singleSegment = (fhd >> 5) & 1;
    const checksum = (fhd >> 2) & 1;
    const dictFlag = fhd & 3;
    if (!singleSegment) pos += 1; // window descriptor
    pos += [0, 1, 2, 4][dictFlag]!;
    pos += fcsFlag === 0 ? singleSegment : [0, 2, 4, 8][fcsFlag]!;
    for (;;) {
      if (pos + 3 > buf.length) return { ok: false, why: 'truncated block header' };
      const header = buf[pos]! | (buf[pos + 1]! << 8) | (buf[pos + 2]! << 16);
      pos += 3;
      const last = header & 1;
      const type = (header >> 1) & 3;
      const size = header >>> 3;
      if (type === 0) {
        total += size;
        pos += size;
      } else if (type === 1) {
        total += size;
        pos += 1;
      } else if (type === 2) {
        total += BLOCK_MAX_BYTES;
        pos += size;
      } else return { ok: false, why: 'reserved block type' };
      if (pos > buf.length) return { ok: false, why: 'truncated block' };
      if (last) break;
    }
    if (checksum) pos += 4;
    frames++;
  }
  return { ok: true, maxBytes: total, frames };
}
