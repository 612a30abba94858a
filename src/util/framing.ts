// CRC-framed records shared by the journal and the retry queue:
//   [u32 LE payload length][u32 LE crc32(payload)][payload]
// crc32 is IEEE CRC-32, the value zlib.crc32 gives (util/crc32.ts).
//
// A torn tail (a write cut by a crash) is a last record that runs past the
// end of the data, or a stretch of zeros from the bad record to the end (a
// file system that extended the file before the data landed): it is cut
// quietly. Any other record that fails its check is corruption: reading goes
// on at the next record that frames correctly (a flipped byte mid-journal
// once made everything after it look like a torn tail, and all of it was
// sent again), and the damaged stretch is reported.
import { crc32 } from './crc32.js';

export const FRAME_HEADER_BYTES = 8;

export function frame(payload: Buffer): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + payload.length);
  out.writeUInt32LE(payload.length, 0);
  out.writeUInt32LE(crc32(payload), 4);
  payload.copy(out, FRAME_HEADER_BYTES);
  return out;
}

export interface Unframed {
  payloads: Buffer[];
  /** Bytes of `data` up to the end of its last valid record (a torn tail starts here). */
  validBytes: number;
  /** True when the data ends in a torn tail (cut it at validBytes). */
  tornTail: boolean;
  /** Damaged stretches [start, end) that are not a torn tail. */
  corrupt: Array<{ start: number; end: number }>;
}

export function unframeAll(data: Buffer, looksLikePayload: (p: Buffer) => boolean = () => true): Unframed {
  const payloads: Buffer[] = [];
  const corrupt: Unframed['corrupt'] = [];
  let pos = 0;
  let validBytes = 0;
  while (pos < data.length) {
    const end = validAt(data, pos, looksLikePayload);
    if (end !== -1) {
      payloads.push(data.subarray(pos + FRAME_HEADER_BYTES, end));
      pos = validBytes = end;
      continue;
    }
    const next = nextValid(data, pos + 1, looksLikePayload);
    if (next === -1 && tornFrom(data, pos)) return { payloads, validBytes, tornTail: true, corrupt };
    corrupt.push({ start: pos, end: next === -1 ? data.length : next });
    if (next === -1) break;
    pos = next;
  }
  return { payloads, validBytes, tornTail: false, corrupt };
}

/** The end of a valid record at `pos`, or -1. */
function validAt(data: Buffer, pos: number, looksLikePayload: (p: Buffer) => boolean): number {
  if (pos + FRAME_HEADER_BYTES > data.length) return -1;
  const len = data.readUInt32LE(pos);
  const end = pos + FRAME_HEADER_BYTES + len;
  if (end > data.length) return -1;
  const payload = data.subarray(pos + FRAME_HEADER_BYTES, end);
  if (!looksLikePayload(payload) || crc32(payload) !== data.readUInt32LE(pos + 4)) return -1;
  return end;
}

/** The first offset from `from` where a valid record starts, or -1. */
function nextValid(data: Buffer, from: number, looksLikePayload: (p: Buffer) => boolean): number {
  for (let p = from; p + FRAME_HEADER_BYTES <= data.length; p++) {
    if (validAt(data, p, looksLikePayload) !== -1) return p;
  }
  return -1;
}

/** A torn tail at `pos`: its record runs past the end (or its header is cut), or everything from it on is zeros. */
function tornFrom(data: Buffer, pos: number): boolean {
  if (pos + FRAME_HEADER_BYTES > data.length) return true;
  if (pos + FRAME_HEADER_BYTES + data.readUInt32LE(pos) > data.length) return true;
  for (let i = pos; i < data.length; i++) if (data[i] !== 0) return false;
  return true;
}
