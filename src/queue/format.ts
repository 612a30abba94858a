// The disk retry queue's on-disk format, read and written here only: by the
// queue itself (retry-queue.ts) and by the read-only views of `spoolship
// status` and `spoolship queue list` on a stopped agent
// (report/queue-reader.ts), so they cannot disagree about what is queued.
//
// Layout of `<state_dir>/queue/`:
//   seg-<n>.q   framed records (util/framing.ts: [u32 len][u32 crc32][payload]),
//               payload = [u32 LE header length][header JSON][body bytes];
//               the body is the batch's exact compressed bytes (retries are
//               byte-identical). The CRC covers the whole payload.
//   acks.log    framed records, payload = JSON [segment, offset] of a record
//               that was delivered (or dead-lettered)
//
// A record whose length field runs past the end of its segment is a torn
// tail when no valid record follows it, and a damaged record otherwise (the
// walk goes on at the next record whose CRC matches).
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { crc32 } from '../util/crc32.js';
import { FRAME_HEADER_BYTES, frame, unframeAll } from '../util/framing.js';
import { StateTooNewError } from '../errors.js';

/** A segment is closed and a new one started past this size. */
export const SEGMENT_BYTES = 64 * 1024 * 1024;
export const ACKS_FILE = 'acks.log';
/** Bytes before a record's header JSON: the frame header and the header length. */
export const RECORD_PREFIX_BYTES = FRAME_HEADER_BYTES + 4;

/**
 * The records' format version, in each record's header (`v`); a record
 * without one was written before it existed, in the same format. A newer
 * one stops the start (StateTooNewError), where reading it as this
 * version could misread it.
 */
export const QUEUE_VERSION = 1;

export interface QueuedHeader {
  /** The record's format version (QUEUE_VERSION; absent in older records). */
  v?: number;
  /** The batch id of the journal (its ranges are already committed). */
  id: number;
  ds: string;
  /** Content-Encoding of the body as it was compressed. */
  encoding: string | null;
  rawLen: number;
  lines: number;
  /** When the batch was first queued (ms since epoch): the 5-hour dedup window check. */
  queuedAt: number;
  /**
   * Its delivery so far when it was queued (attempts, the last HTTP status
   * or null for a network failure, the last error), for `queue list` and a
   * move to the dead-letter store once the agent that knew it has stopped.
   * Absent in records written before this field (and read as unknown).
   */
  history?: { attempts: number; lastStatus: number | null; lastError: string | null };
}

export interface QueueRef {
  seg: number;
  off: number;
}

export function segmentFile(dir: string, seg: number): string {
  return path.join(dir, `seg-${String(seg).padStart(8, '0')}.q`);
}

/** The segment numbers in `dir`, oldest first; none when the directory does not exist. */
export async function listSegments(dir: string): Promise<number[]> {
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return names
    .map((n) => /^seg-(\d+)\.q$/.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
}

/**
 * The bytes of a record before its body: frame header (length, and the CRC
 * over header length, header and `body`), header length, header. Written
 * with the body after it, so the body is never copied into one buffer.
 */
export function encodeRecordPrefix(header: QueuedHeader, body: Buffer): Buffer {
  const head = Buffer.from(JSON.stringify({ v: QUEUE_VERSION, ...header }));
  const prefix = Buffer.allocUnsafe(RECORD_PREFIX_BYTES + head.length);
  prefix.writeUInt32LE(4 + head.length + body.length, 0);
  prefix.writeUInt32LE(head.length, FRAME_HEADER_BYTES);
  head.copy(prefix, RECORD_PREFIX_BYTES);
  prefix.writeUInt32LE(crc32(body, crc32(prefix.subarray(FRAME_HEADER_BYTES))), 4);
  return prefix;
}

/** A header this release can read (its version left out: every reader sees one shape), else StateTooNewError naming `file`. */
function versionChecked(header: QueuedHeader, file: string): QueuedHeader {
  const { v, ...rest } = header;
  if (v !== undefined && v !== QUEUE_VERSION) throw new StateTooNewError(file, v, QUEUE_VERSION);
  return rest;
}

/** A whole record read back, CRC-checked; null when it is damaged. The body is a view into `record`. */
export function decodeRecord(record: Buffer, file: string): { header: QueuedHeader; body: Buffer } | null {
  if (record.length < RECORD_PREFIX_BYTES) return null;
  const len = record.readUInt32LE(0);
  if (FRAME_HEADER_BYTES + len > record.length || len < 4) return null;
  const payload = record.subarray(FRAME_HEADER_BYTES, FRAME_HEADER_BYTES + len);
  if (crc32(payload) !== record.readUInt32LE(4)) return null;
  const headLen = payload.readUInt32LE(0);
  if (4 + headLen > len) return null;
  let header: QueuedHeader;
  try {
    header = JSON.parse(payload.subarray(4, 4 + headLen).toString('utf8')) as QueuedHeader;
  } catch {
    return null;
  }
  return { header: versionChecked(header, file), body: payload.subarray(4 + headLen) };
}

/**
 * The header of the record at `off` (`len` bytes on disk) without reading its
 * body (the CRC is not checked: that needs the body); null when it cannot be
 * read or is not a header.
 */
export async function readRecordHeader(fh: FileHandle, off: number, len: number, file: string): Promise<{ header: QueuedHeader; bodyBytes: number } | null> {
  const head = Buffer.allocUnsafe(RECORD_PREFIX_BYTES);
  const { bytesRead } = await fh.read(head, 0, head.length, off);
  if (bytesRead !== head.length) return null;
  const headLen = head.readUInt32LE(FRAME_HEADER_BYTES);
  if (RECORD_PREFIX_BYTES + headLen > len) return null;
  const json = Buffer.allocUnsafe(headLen);
  await fh.read(json, 0, headLen, off + RECORD_PREFIX_BYTES);
  let header: QueuedHeader;
  try {
    header = JSON.parse(json.toString('utf8')) as QueuedHeader;
  } catch {
    return null;
  }
  return typeof header.id === 'number' ? { header: versionChecked(header, file), bodyBytes: len - RECORD_PREFIX_BYTES - headLen } : null;
}

/**
 * Each segment's first record is in a format this release reads; else
 * StateTooNewError, before anything of the state is written (a newer
 * release writes every record in its own version). Damaged or empty
 * segments are left to the queue's own checks.
 */
export async function assertQueueReadable(dir: string): Promise<void> {
  for (const seg of await listSegments(dir)) {
    const file = segmentFile(dir, seg);
    const fh = await fsp.open(file, 'r').catch(() => null);
    if (!fh) continue;
    try {
      const head = Buffer.alloc(FRAME_HEADER_BYTES);
      const { bytesRead } = await fh.read(head, 0, head.length, 0);
      if (bytesRead === head.length) await readRecordHeader(fh, 0, FRAME_HEADER_BYTES + head.readUInt32LE(0), file);
    } finally {
      await fh.close();
    }
  }
}

export interface SegmentIndex {
  /** Every record found, by offset and length on disk (frame included). */
  records: Array<{ off: number; len: number }>;
  /** Damaged stretches skipped: [offset, bytes]. */
  damaged: Array<[number, number]>;
  /** Where the valid records end; bytes after it are a torn tail. */
  end: number;
}

/** Walk a segment's frame headers (bodies are read only after damage, to find the next valid record). */
export async function indexSegment(fh: FileHandle, size: number): Promise<SegmentIndex> {
  const out: SegmentIndex = { records: [], damaged: [], end: 0 };
  const head = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  let off = 0;
  while (off + FRAME_HEADER_BYTES <= size) {
    await fh.read(head, 0, FRAME_HEADER_BYTES, off);
    const len = FRAME_HEADER_BYTES + head.readUInt32LE(0);
    if (off + len > size) {
      const next = await nextValidRecord(fh, off + 1, size);
      if (next === -1) break;
      out.damaged.push([off, next - off]);
      off = next;
      continue;
    }
    out.records.push({ off, len });
    off += len;
  }
  out.end = off;
  return out;
}

/** The offset of the first record from `from` on whose length fits and whose CRC matches, or -1 (read only after damage). */
async function nextValidRecord(fh: FileHandle, from: number, size: number): Promise<number> {
  const rest = Buffer.allocUnsafe(size - from);
  await fh.read(rest, 0, rest.length, from);
  for (let p = 0; p + RECORD_PREFIX_BYTES <= rest.length; p++) {
    const len = rest.readUInt32LE(p);
    const end = p + FRAME_HEADER_BYTES + len;
    if (len < 4 || end > rest.length) continue;
    const payload = rest.subarray(p + FRAME_HEADER_BYTES, end);
    const headLen = payload.readUInt32LE(0);
    // A record's header is JSON: a cheap check before the CRC.
    if (headLen + 4 > len || payload[4] !== 0x7b) continue;
    if (crc32(payload) === rest.readUInt32LE(p + 4)) return from + p;
  }
  return -1;
}

export function ackKey(ref: QueueRef): string {
  return `${ref.seg}:${ref.off}`;
}

export function encodeAck(ref: QueueRef): Buffer {
  return frame(Buffer.from(JSON.stringify([ref.seg, ref.off])));
}

/** A damaged stretch of a state file: bytes [start, end). */
export interface ByteSpan {
  start: number;
  end: number;
}

/** acks.log (`file`) holds damaged records at `ranges`: the records they acknowledged cannot be told, and come back. */
export type AcksDamagedHandler = (file: string, ranges: ReadonlyArray<ByteSpan>) => void;

/**
 * The records acks.log names (as ackKey); none when it does not exist. A
 * torn last ack is not counted; a damaged one (its CRC fails, records
 * follow) is in `damaged`: which record it acknowledged cannot be told.
 */
export async function readAcks(dir: string): Promise<{ acked: Set<string>; damaged: ByteSpan[] }> {
  const acked = new Set<string>();
  let data: Buffer;
  try {
    data = await fsp.readFile(path.join(dir, ACKS_FILE));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { acked, damaged: [] };
    throw err;
  }
  const { payloads, corrupt } = unframeAll(data);
  for (const p of payloads) {
    const [seg, off] = JSON.parse(p.toString('utf8')) as [number, number];
    acked.add(ackKey({ seg, off }));
  }
  return { acked, damaged: corrupt };
}
