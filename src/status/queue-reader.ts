// Read-only count of the disk retry queue (layout in src/queue/retry-queue.ts)
// for `spoolship status` from the state_dir. RetryQueue.open cuts torn
// tails and rewrites acks.log, so status walks the frame headers itself:
// a record counts while its [segment, offset] is not in acks.log. A torn
// tail (being written, or left by a crash) is not counted.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { FRAME_HEADER_BYTES, unframeAll } from '../util/framing.js';

export interface QueueView {
  batches: number;
  bytes: number;
}

export async function readQueueView(queueDir: string): Promise<QueueView> {
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
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { batches: 0, bytes: 0 };
    throw err;
  }
  const view: QueueView = { batches: 0, bytes: 0 };
  const head = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  for (const name of names) {
    const m = /^seg-(\d+)\.q$/.exec(name);
    if (!m) continue;
    const seg = Number(m[1]);
    let fh;
    try {
      fh = await fsp.open(path.join(queueDir, name), 'r');
    } catch (err) {
      // Deleted by the agent since the listing: all of it was acknowledged.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    try {
      const size = (await fh.stat()).size;
      for (let off = 0; off + FRAME_HEADER_BYTES <= size; ) {
        await fh.read(head, 0, FRAME_HEADER_BYTES, off);
        const len = FRAME_HEADER_BYTES + head.readUInt32LE(0);
        if (off + len > size) break;
        if (!acked.has(`${seg}:${off}`)) {
          view.batches++;
          view.bytes += len;
        }
        off += len;
      }
    } finally {
      await fh.close();
    }
  }
  return view;
}
