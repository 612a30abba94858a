// The retry queue's segment files, one record at a time (retry-queue.ts
// keeps the index and the serial chain): reading a record or its header
// where the index says it is, writing one back to back, and indexing every
// segment at open (acks applied, damaged records reported, torn tails cut).
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { fsyncDir } from '../util/fsx.js';
import { StateTooNewError } from '../errors.js';
import { ACKS_FILE, ackKey, decodeRecord, encodeAck, indexSegment, listSegments, readRecordHeader, segmentFile, type QueuedHeader, type QueueRef } from './format.js';

/** A record that cannot be read is null (damaged: the caller skips it); one in a newer format stops the start. */
function orNull(err: unknown): null {
  if (err instanceof StateTooNewError) throw err;
  return null;
}

/** A damaged record (or, `torn`, a tail cut by a crash) in the segment `file`; `what` says where. */
export type QueueCorruptHandler = (what: string, torn?: boolean, file?: string) => void;

/** One record of the index. */
export interface Entry {
  seg: number;
  off: number;
  /** Frame length on disk (header + payload). */
  len: number;
  acked: boolean;
  leased: boolean;
  /** The record's Data Source, once known (appended here, or its header read): take() may pass it over. */
  ds?: string;
}

/** A record's header alone (the body is not read); null when it cannot be read. */
export async function readHeaderAt(file: string, e: Entry): Promise<{ header: QueuedHeader; bodyBytes: number } | null> {
  const fh = await fsp.open(file, 'r').catch(() => null);
  if (!fh) return null;
  try {
    return await readRecordHeader(fh, e.off, e.len, file).catch(orNull);
  } finally {
    await fh.close();
  }
}

/** A whole record (its body a view of the one buffer read); null when it is short or damaged. */
export async function readRecordAt(file: string, e: Entry): Promise<{ header: QueuedHeader; body: Buffer } | null> {
  const fh = await fsp.open(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(e.len);
    const { bytesRead } = await fh.read(buf, 0, e.len, e.off);
    if (bytesRead !== e.len) return null;
    return decodeRecord(buf, file);
  } catch (err) {
    return orNull(err);
  } finally {
    await fh.close();
  }
}

/** Positional write of `bufs` back to back from `off`, looping over short writes. */
export async function writeAllAt(fh: FileHandle, bufs: Buffer[], off: number): Promise<void> {
  for (const b of bufs) {
    let done = 0;
    while (done < b.length) {
      const { bytesWritten } = await fh.write(b, done, b.length - done, off);
      done += bytesWritten;
      off += bytesWritten;
    }
  }
}

/**
 * Index every segment of `dir` by walking frame headers (bodies are not
 * read), mark the records `acked` names, report damaged records and cut torn
 * tails. `last`: the last segment and where its records end.
 */
export async function indexSegments(dir: string, acked: ReadonlySet<string>, onCorrupt: QueueCorruptHandler) {
  const entries: Entry[] = [];
  const segBytes = new Map<number, number>();
  let last: { seg: number; end: number } | null = null;
  for (const seg of await listSegments(dir)) {
    const file = segmentFile(dir, seg);
    const fh = await fsp.open(file, 'r+');
    try {
      const size = (await fh.stat()).size;
      const index = await indexSegment(fh, size);
      // A damaged record's lines are read again from the spool by the agent.
      for (const [off, bytes] of index.damaged) onCorrupt(`damaged record in segment ${seg} at offset ${off} (${bytes} bytes)`, false, file);
      for (const { off, len } of index.records) {
        entries.push({ seg, off, len, acked: acked.has(ackKey({ seg, off })), leased: false });
      }
      if (index.end < size) {
        onCorrupt(`torn tail of segment ${seg} (${size - index.end} bytes)`, true, file);
        await fh.truncate(index.end);
        await fh.sync();
      }
      last = { seg, end: index.end };
      segBytes.set(seg, index.end);
    } finally {
      await fh.close();
    }
  }
  return { entries, segBytes, last };
}

/** Whether `e` lies before `at` in the queue's order. */
export function isBefore(e: QueueRef, at: QueueRef): boolean {
  return e.seg < at.seg || (e.seg === at.seg && e.off < at.off);
}

/** Replace acks.log with the acks of `entries` that are acknowledged (atomically); how many it holds. */
export async function writeAcksOf(dir: string, entries: readonly Entry[]): Promise<number> {
  const file = path.join(dir, ACKS_FILE);
  const keep = entries.filter((e) => e.acked).map((e) => encodeAck(e));
  const tmp = `${file}.tmp`;
  await fsp.writeFile(tmp, Buffer.concat(keep));
  const fh = await fsp.open(tmp, 'r+');
  await fh.sync();
  await fh.close();
  await fsp.rename(tmp, file);
  await fsyncDir(dir);
  return keep.length;
}

type HeaderOf = (e: Entry) => Promise<{ header: QueuedHeader; bodyBytes: number } | null>;

export interface LiveRecord {
  ref: QueueRef;
  len: number;
  bodyBytes: number;
  header: QueuedHeader;
  /** Being sent or moved now. */
  leased: boolean;
}

/** Every record not acknowledged whose header can be read, oldest first (a corrupt header is left to take(), which skips and counts the record). */
export async function listLive(entries: readonly Entry[], headerOf: HeaderOf): Promise<LiveRecord[]> {
  const out: LiveRecord[] = [];
  for (const e of entries) {
    const rec = e.acked ? null : await headerOf(e);
    if (rec && !e.acked) out.push({ ref: { seg: e.seg, off: e.off }, len: e.len, bodyBytes: rec.bodyBytes, header: rec.header, leased: e.leased });
  }
  return out;
}

/** Records not acknowledged and their bytes on disk per Data Source (a header read only where the Data Source is not known yet). */
export async function liveByDataSource(entries: readonly Entry[], headerOf: HeaderOf): Promise<Map<string, { batches: number; bytes: number }>> {
  const out = new Map<string, { batches: number; bytes: number }>();
  for (const e of entries) {
    const ds = e.acked ? undefined : (e.ds ?? (await headerOf(e))?.header.ds);
    if (ds === undefined || e.acked) continue;
    const d = out.get(ds) ?? { batches: 0, bytes: 0 };
    d.batches++;
    d.bytes += e.len;
    out.set(ds, d);
  }
  return out;
}
