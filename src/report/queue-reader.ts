// Read-only view of the disk retry queue, for `spoolship status` and
// `spoolship queue list` on a stopped agent, safe beside a running one. It
// reads the queue's own format module (src/queue/format.ts) but not through
// RetryQueue.open, which cuts torn tails and rewrites acks.log: a record
// counts while its [segment, offset] is not in acks.log and it is not a copy
// left by a compaction cut short; a torn tail (being written, or left by a
// crash) is not counted, and a damaged record is skipped as the queue skips it.
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { isLeftCopy, unfinishedCompaction } from '../queue/compact.js';
import { ACKS_FILE, ackKey, decodeRecord, indexSegment, listSegments, readAcks, readRecordHeader, segmentFile, type AcksDamagedHandler, type QueuedHeader } from '../queue/format.js';

export interface QueueView {
  batches: number;
  bytes: number;
  /** The same, per Data Source. */
  byDataSource: Map<string, { batches: number; bytes: number }>;
}

export interface QueueRecordView {
  seg: number;
  off: number;
  /** Bytes on disk (frame included). */
  len: number;
  /** Compressed body bytes. */
  bodyBytes: number;
  /** null when the header cannot be read (a damaged record). */
  header: QueuedHeader | null;
}

export async function readQueueView(queueDir: string): Promise<QueueView> {
  const records = await readQueueRecords(queueDir);
  const byDataSource = new Map<string, { batches: number; bytes: number }>();
  for (const r of records) {
    // A record whose header cannot be read belongs to no known Data Source (it counts in the totals).
    if (!r.header) continue;
    const d = byDataSource.get(r.header.ds) ?? { batches: 0, bytes: 0 };
    d.batches++;
    d.bytes += r.len;
    byDataSource.set(r.header.ds, d);
  }
  return { batches: records.length, bytes: records.reduce((n, r) => n + r.len, 0), byDataSource };
}

/**
 * Every record not acknowledged, by segment and offset, with its header.
 * `onAcksDamaged`: acks.log holds damaged records, so a batch listed may have
 * been acknowledged already. `verify`: each record is read whole and its CRC
 * checked (`queue list|dead-letter`; `status` reads headers only): a damaged
 * one has no header.
 */
export async function readQueueRecords(queueDir: string, opts: { verify?: boolean; onAcksDamaged?: AcksDamagedHandler } = {}): Promise<QueueRecordView[]> {
  const { acked, damaged } = await readAcks(queueDir);
  if (damaged.length > 0) opts.onAcksDamaged?.(path.join(queueDir, ACKS_FILE), damaged);
  const out: QueueRecordView[] = [];
  const segments = await listSegments(queueDir);
  // Copies a compaction cut short left count as acknowledged, as the queue counts them (queue/compact.ts).
  const cut = await unfinishedCompaction(queueDir, new Set(segments));
  for (const seg of segments) {
    let fh;
    try {
      fh = await fsp.open(segmentFile(queueDir, seg), 'r');
    } catch (err) {
      // Deleted by the agent since the listing: all of it was acknowledged.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    try {
      const { records } = await indexSegment(fh, (await fh.stat()).size);
      for (const { off, len } of records) {
        if (acked.has(ackKey({ seg, off }))) continue;
        const file = segmentFile(queueDir, seg);
        const rec = opts.verify ? await readVerified(fh, off, len, file) : await readRecordHeader(fh, off, len, file);
        if (isLeftCopy(cut, { seg, off }, rec?.header.id)) continue;
        out.push({ seg, off, len, bodyBytes: rec?.bodyBytes ?? 0, header: rec?.header ?? null });
      }
    } finally {
      await fh.close();
    }
  }
  return out;
}

/** The record's header after its CRC is checked, or null (damaged). */
async function readVerified(fh: FileHandle, off: number, len: number, file: string): Promise<{ header: QueuedHeader; bodyBytes: number } | null> {
  const record = Buffer.allocUnsafe(len);
  const { bytesRead } = await fh.read(record, 0, len, off);
  const decoded = bytesRead === len ? decodeRecord(record, file) : null;
  return decoded && typeof decoded.header.id === 'number' ? { header: decoded.header, bodyBytes: decoded.body.length } : null;
}
