// Reclaiming the retry queue's dead bytes (retry-queue.ts runs it): a
// segment is deleted only once every record in it is acknowledged, so a few
// records left in many segments (a parked Data Source's batches while the
// others' flowed through) held the segments' delivered records on disk too,
// past queue.max_bytes and without bound. Compaction copies a segment's
// records still waiting to the queue's tail, then deletes the segment.
//
// Crash safety: before the first copy, `compact.json` names the segment and
// the batch ids being copied, and where the copies start. Deleting the
// segment is the step that makes the copies the records: at open, while the
// segment still exists, records at or after that place with those ids are
// copies of an unfinished compaction and count as acknowledged (the queue
// and the read-only view of report/queue-reader.ts alike), so no batch is
// ever there twice.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { QueueMarkerCorruptError } from '../errors.js';
import { fsyncDir } from '../util/fsx.js';
import { SEGMENT_BYTES, type QueueRef } from './format.js';
import { isBefore, type Entry } from './segments.js';

export const COMPACT_MARKER = 'compact.json';

/** Segments are sized from queue.max_bytes: an eighth of it, 4 KiB to 64 MiB (format.ts SEGMENT_BYTES). */
export function segmentBytesFor(maxBytes: number): number {
  return Math.max(4096, Math.min(SEGMENT_BYTES, Math.floor(maxBytes / 8)));
}

const MARKER_VERSION = 1;

export interface CompactMarker {
  v: typeof MARKER_VERSION;
  /** The segment being compacted. */
  from: number;
  /** Where its copies start (every copy is at or after it). */
  at: QueueRef;
  /** The batch ids of the records copied. */
  ids: number[];
}

/** Written whole or not at all (a temporary file, fsync'd, renamed, the directory fsync'd). */
export async function writeMarker(dir: string, m: CompactMarker): Promise<void> {
  const file = path.join(dir, COMPACT_MARKER);
  const fh = await fsp.open(`${file}.tmp`, 'w');
  try {
    await fh.writeFile(JSON.stringify(m));
    await fh.sync();
  } finally {
    await fh.close();
  }
  await fsp.rename(`${file}.tmp`, file);
  await fsyncDir(dir);
}

export async function removeMarker(dir: string): Promise<void> {
  await fsp.rm(path.join(dir, COMPACT_MARKER), { force: true });
  await fsp.rm(path.join(dir, `${COMPACT_MARKER}.tmp`), { force: true });
  await fsyncDir(dir);
}

/** The marker of an unfinished compaction; null when there is none (or its segment is already gone: the copies are the records). */
export async function unfinishedCompaction(dir: string, segments: ReadonlySet<number>): Promise<CompactMarker | null> {
  let text: string;
  try {
    text = await fsp.readFile(path.join(dir, COMPACT_MARKER), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  let m: CompactMarker;
  try {
    m = JSON.parse(text) as CompactMarker;
  } catch (err) {
    throw new QueueMarkerCorruptError(path.join(dir, COMPACT_MARKER), (err as Error).message);
  }
  if (m.v !== MARKER_VERSION || !Number.isInteger(m.from) || !Array.isArray(m.ids)) throw new QueueMarkerCorruptError(path.join(dir, COMPACT_MARKER), `not a version ${MARKER_VERSION} marker`);
  return segments.has(m.from) ? m : null;
}

/** Whether the record at `ref` with batch `id` is a copy an unfinished compaction left (it then counts as acknowledged). */
export function isLeftCopy(m: CompactMarker | null, ref: QueueRef, id: number | undefined): boolean {
  if (!m || id === undefined || ref.seg === m.from) return false;
  return !isBefore(ref, m.at) && m.ids.includes(id);
}

/** The records not acknowledged that an unfinished compaction's copies are (none without one). */
export async function leftCopies(dir: string, entries: readonly Entry[], segments: ReadonlySet<number>, idOf: (e: Entry) => Promise<number | undefined>): Promise<Entry[]> {
  const m = await unfinishedCompaction(dir, segments);
  const out: Entry[] = [];
  for (const e of m ? entries : []) if (!e.acked && isLeftCopy(m, e, await idOf(e))) out.push(e);
  return out;
}

/** Dead (acknowledged) and live bytes of one segment's records. */
export interface SegmentUse {
  seg: number;
  dead: number;
  live: number;
  /** A record of it is being sent or moved: it cannot be compacted now. */
  leased: boolean;
}

/**
 * The segment to compact now, or null: only while the dead bytes of all
 * segments pass one segment's size, the closed segment (not `writeSeg`) with
 * the most of them and none of its records leased.
 */
export function segmentToCompact(use: Iterable<SegmentUse>, writeSeg: number, segmentBytes: number): number | null {
  let dead = 0;
  let best: SegmentUse | null = null;
  for (const u of use) {
    dead += u.dead;
    if (u.seg === writeSeg || u.leased || u.dead === 0) continue;
    if (!best || u.dead > best.dead) best = u;
  }
  return dead > segmentBytes && best ? best.seg : null;
}

/** What compaction needs of the queue (retry-queue.ts): run inside its serial chain, never beside an append or an ack. */
export interface CompactTarget {
  dir: string;
  /** The live records of `seg`, leased for the move (false: one is leased already; nothing changed). */
  leaseAll(seg: number): QueueRef[] | false;
  /** Hand them back (the move did not happen). */
  unleaseAll(seg: number): void;
  /** The batch id of a record, from its header; undefined when it cannot be read. */
  idOf(ref: QueueRef): Promise<number | undefined>;
  /** Copy a record to the tail (CRC-checked, fsync'd); false when it is damaged. */
  copy(ref: QueueRef): Promise<boolean>;
  /** Where the next append goes. */
  tail(): QueueRef;
  /** Forget the copies made since `tail` and cut them off the disk (needs no free space). */
  dropCopiesFrom(tail: QueueRef): Promise<void>;
  /** Delete segment `seg` and forget its records (its live ones are copied). */
  dropSegment(seg: number): Promise<void>;
  /** A test's look at the disk at each step (crash states). */
  onStep?: (step: 'copied' | 'dropped') => void;
}

/**
 * Move segment `seg`'s live records to the tail and delete it. 'done';
 * 'skipped' when it cannot be moved (a record leased, damaged or unreadable:
 * take() finds and reports a damaged one); 'failed' when a write failed
 * (ENOSPC) and the move was undone; 'stuck' when a failed move could not be
 * undone: its marker stays for the next open to resolve, and the queue must
 * not compact again in this process.
 */
export async function compactSegment(q: CompactTarget, seg: number): Promise<'done' | 'skipped' | 'failed' | 'stuck'> {
  const moving = q.leaseAll(seg);
  if (!moving) return 'skipped';
  const ids: number[] = [];
  for (const ref of moving) {
    const id = await q.idOf(ref);
    if (id === undefined) {
      q.unleaseAll(seg);
      return 'skipped';
    }
    ids.push(id);
  }
  const at = q.tail();
  let damaged = false;
  try {
    await writeMarker(q.dir, { v: MARKER_VERSION, from: seg, at, ids });
    for (const ref of moving) {
      damaged = !(await q.copy(ref));
      if (damaged) throw new Error('damaged');
    }
  } catch {
    // ENOSPC, or a damaged record: the copies go, the segment stays as it was.
    try {
      await q.dropCopiesFrom(at);
      await removeMarker(q.dir);
    } catch {
      return 'stuck';
    }
    q.unleaseAll(seg);
    return damaged ? 'skipped' : 'failed';
  }
  q.onStep?.('copied');
  // The step that makes the copies the records (see the top of this file).
  await q.dropSegment(seg);
  q.onStep?.('dropped');
  await removeMarker(q.dir);
  return 'done';
}
