// CRC-framed records shared by the journal and the retry queue:
//   [u32 LE payload length][u32 LE crc32(payload)][payload]
// crc32 is Node's zlib.crc32 (IEEE CRC-32, Node >= 20.15). A record whose
// length runs past the end of the data, or whose CRC does not match, ends the
// readable prefix: everything from it on is a torn or corrupt tail.
import zlib from 'node:zlib';

export const FRAME_HEADER_BYTES = 8;

export function frame(payload: Buffer): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + payload.length);
  out.writeUInt32LE(payload.length, 0);
  out.writeUInt32LE(zlib.crc32(payload), 4);
  payload.copy(out, FRAME_HEADER_BYTES);
  return out;
}

export interface Unframed {
  payloads: Buffer[];
  /** Bytes of `data` that form whole, valid records. */
  validBytes: number;
  /** True when bytes after validBytes were dropped (torn or corrupt). */
  tornTail: boolean;
}

export function unframeAll(data: Buffer): Unframed {
  const payloads: Buffer[] = [];
  let pos = 0;
  while (pos + FRAME_HEADER_BYTES <= data.length) {
    const len = data.readUInt32LE(pos);
    const crc = data.readUInt32LE(pos + 4);
    const end = pos + FRAME_HEADER_BYTES + len;
    if (end > data.length) break;
    const payload = data.subarray(pos + FRAME_HEADER_BYTES, end);
    if (zlib.crc32(payload) !== crc) break;
    payloads.push(payload);
    pos = end;
  }
  return { payloads, validBytes: pos, tornTail: pos !== data.length };
}
