// Read-only view of the disk retry queue (layout in src/queue/retry-queue.ts)
// for `spoolship status` and `spoolship queue list`, safe beside a running
// agent. RetryQueue.open cuts torn tails and rewrites acks.log, so this walks
// the frame headers itself: a record counts while its [segment, offset] is
// not in acks.log. A torn tail (being written, or left by a crash) is not
// counted.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { QueuedHeader } from '../queue/retry-queue.js';
import { FRAME_HEADER_BYTES, unframeAll } from '../util/framing.js';

export interface QueueView {
  batches: number;
  bytes: number;
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
  const records = await readQueueRecords(queueDir, false);
  return { batches: records.length, bytes: records.reduce((n, r) => n + r.len, 0) };
}

/** Every record not acknowledged, by segment and offset; with `headers`, each one's header too. */
export async function readQueueRecords(queueDir: string, headers = true): Promise<QueueRecordView[]> {
  const acked = new Set<string>();
  try {
    for (const p of unframeAll(await fsp.readFile(path.join(queueDir, 'acks.log'))).payloads) {
      const [seg, off] = JSON.parse(p.toString('utf8')) as [number, number];
      acked.add(`${seg}:${off}`);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  let names: string[];
  try {
    names = await fsp.readdir(queueDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: QueueRecordView[] = [];
  const head = Buffer.allocUnsafe(FRAME_HEADER_BYTES + 4);
  const segs = names.map((n) => /^seg-(\d+)\.q$/.exec(n)).filter((m): m is RegExpExecArray => m !== null).map((m) => Number(m[1])).sort((a, b) => a - b);
  for (const seg of segs) {
    let fh;
    try {
      fh = await fsp.open(path.join(queueDir, `seg-${String(seg).padStart(8, '0')}.q`), 'r');
    } catch (err) {
      // Deleted by the agent since the listing: all of it was acknowledged.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    try {
      const size = (await fh.stat()).size;
      for (let off = 0; off + FRAME_HEADER_BYTES <= size; ) {
        await fh.read(head, 0, head.length, off);
        const len = FRAME_HEADER_BYTES + head.readUInt32LE(0);
        if (off + len > size) break;
        if (!acked.has(`${seg}:${off}`)) {
          const headLen = head.readUInt32LE(FRAME_HEADER_BYTES);
          let header: QueuedHeader | null = null;
          if (headers && headLen + FRAME_HEADER_BYTES + 4 <= len) {
            const json = Buffer.allocUnsafe(headLen);
            await fh.read(json, 0, headLen, off + head.length);
            try {
              header = JSON.parse(json.toString('utf8')) as QueuedHeader;
            } catch {
              header = null;
            }
          }
          out.push({ seg, off, len, bodyBytes: Math.max(0, len - FRAME_HEADER_BYTES - 4 - headLen), header });
        }
        off += len;
      }
    } finally {
      await fh.close();
    }
  }
  return out;
}
