// How large a zstd body can decode, read from its frame and block headers
// without decoding it (RFC 8878). Node 20 has no streaming zstd decoder to
// stop at a cap the way gzip's inflate stops at maxOutputLength, so a 30 KB
// body that decodes to 1 GB was decoded whole before the size check.
//
// The bound is exact for raw and RLE blocks; a compressed block decodes to at
// most Block_Maximum_Size = min(window size, 128 KiB), which the decoder
// enforces, so the sum is a hard ceiling even when a frame's declared content
// size lies (the decoder checks that claim only at the frame's end).

const FRAME_MAGIC = 0xfd2fb528;
const SKIPPABLE_MAGIC_MASK = 0xfffffff0;
const SKIPPABLE_MAGIC = 0x184d2a50;
const BLOCK_SIZE_MAX = 128 * 1024;

export interface ZstdBound {
  /** Most bytes the body can decode to. */
  upperBytes: number;
  /** Sum of the frames' declared content sizes, or null when a frame declares none. */
  declaredBytes: number | null;
}

/** null when the headers are malformed or truncated (the decoder would refuse the body too). */
export function zstdDecodedBound(buf: Buffer): ZstdBound | null {
  let pos = 0;
  let upperBytes = 0;
  let declaredBytes: number | null = 0;
  while (pos < buf.length) {
    if (pos + 8 > buf.length) return null;
    const magic = buf.readUInt32LE(pos);
    if ((magic & SKIPPABLE_MAGIC_MASK) >>> 0 === SKIPPABLE_MAGIC) {
      pos += 8 + buf.readUInt32LE(pos + 4);
      if (pos > buf.length) return null;
      continue;
    }
    if (magic !== FRAME_MAGIC) return null;
    const header = frameHeader(buf, pos + 4);
    if (header === null) return null;
    declaredBytes = declaredBytes === null || header.contentSize === null ? null : declaredBytes + header.contentSize;
    const blocks = walkBlocks(buf, header.end, Math.min(header.windowSize, BLOCK_SIZE_MAX));
    if (blocks === null) return null;
    upperBytes += blocks.upperBytes;
    pos = blocks.end + (header.checksum ? 4 : 0);
    if (pos > buf.length) return null;
  }
  return { upperBytes, declaredBytes };
}

interface FrameHeader {
  end: number;
  windowSize: number;
  contentSize: number | null;
  checksum: boolean;
}

function frameHeader(buf: Buffer, at: number): FrameHeader | null {
  const fhd = buf[at]!;
  const fcsFlag = fhd >> 6;
  const singleSegment = (fhd & 0x20) !== 0;
  if ((fhd & 0x08) !== 0) return null; // reserved bit
  const didBytes = [0, 1, 2, 4][fhd & 0x03]!;
  const fcsBytes = [singleSegment ? 1 : 0, 2, 4, 8][fcsFlag]!;
  let pos = at + 1;
  let windowSize = 0;
  if (!singleSegment) {
    const wd = buf[pos++]!;
    const windowLog = 10 + (wd >> 3);
    windowSize = 2 ** windowLog + (2 ** windowLog / 8) * (wd & 0x07);
  }
  pos += didBytes;
  if (pos + fcsBytes > buf.length) return null;
  let contentSize: number | null = null;
  if (fcsBytes === 1) contentSize = buf[pos]!;
  else if (fcsBytes === 2) contentSize = buf.readUInt16LE(pos) + 256;
  else if (fcsBytes === 4) contentSize = buf.readUInt32LE(pos);
  else if (fcsBytes === 8) contentSize = Number(buf.readBigUInt64LE(pos));
  pos += fcsBytes;
  if (singleSegment) windowSize = contentSize!;
  return { end: pos, windowSize, contentSize, checksum: (fhd & 0x04) !== 0 };
}

function walkBlocks(buf: Buffer, from: number, blockMax: number): { end: number; upperBytes: number } | null {
  let pos = from;
  let upperBytes = 0;
  for (;;) {
    if (pos + 3 > buf.length) return null;
    const h = buf[pos]! | (buf[pos + 1]! << 8) | (buf[pos + 2]! << 16);
    const last = (h & 1) === 1;
    const type = (h >> 1) & 0x03;
    const size = h >>> 3;
    pos += 3;
    if (type === 0) {
      upperBytes += size; // raw: the bytes themselves
      pos += size;
    } else if (type === 1) {
      upperBytes += size; // RLE: one byte repeated `size` times
      pos += 1;
    } else if (type === 2) {
      upperBytes += blockMax; // compressed: at most one full block
      pos += size;
    } else {
      return null; // reserved block type
    }
    if (pos > buf.length) return null;
    if (last) return { end: pos, upperBytes };
  }
}
