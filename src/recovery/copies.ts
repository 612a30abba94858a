// A batch's range read back from a copy of its file, when the file itself no
// longer has those bytes (README "Delivery guarantee"). logrotate's copytruncate copies
// the file beside it (`app.log.1`, a name out of the patterns) and then
// truncates it: a batch unanswered at a kill -9 just before was counted lost
// at the restart although its bytes were one directory entry away. A copy is
// used only when it starts with the file's fingerprint and the range's bytes
// have the CRC the batch's intent kept (reform.ts), so no other lines can
// take the batch's place. A rotated file already compressed, or deleted, has
// no such copy: those lines stay lost (README "Delivery guarantee").
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { FileMeta, RangeRecord } from '../state/journal.js';
import { sameContentStart } from '../spool/identity.js';

type Range = RangeRecord & { crc?: number | null };

export type ReadRange = (p: string, start: number, end: number) => Promise<Buffer | null>;

/** Copies looked up for one recovery: each directory is listed once (all of it: a cap hid a copy that sorted after 10,000 other names), each candidate's first bytes read once. */
export class CopyFinder {
  private readonly listed = new Map<string, Promise<Array<{ path: string; size: number; dev: number; ino: number }>>>();
  private readonly starts = new Map<string, Promise<boolean>>();

  constructor(
    private readonly readRange: ReadRange,
    private readonly sameBytes: (r: Range, data: Buffer) => boolean,
  ) {}

  /** The range's bytes from a copy of `meta`'s file in the directory of `filePath`, with the CRC `r` kept; null when there is none. */
  async read(filePath: string, meta: FileMeta, r: Range): Promise<{ data: Buffer; copy: string } | null> {
    if (typeof r.crc !== 'number' || meta.fpLen === 0) return null;
    const dir = path.dirname(filePath);
    let files = this.listed.get(dir);
    if (!files) this.listed.set(dir, (files = list(dir)));
    for (const f of await files) {
      if ((f.dev === meta.dev && f.ino === meta.ino) || f.size < r.end) continue;
      let same = this.starts.get(`${f.path}\0${meta.key}`);
      if (!same) this.starts.set(`${f.path}\0${meta.key}`, (same = startsAs(f.path, meta)));
      if (!(await same)) continue;
      const data = await this.readRange(f.path, r.start, r.end);
      if (data && this.sameBytes(r, data)) return { data, copy: f.path };
    }
    return null;
  }
}

async function list(dir: string): Promise<Array<{ path: string; size: number; dev: number; ino: number }>> {
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  const out: Array<{ path: string; size: number; dev: number; ino: number }> = [];
  for (const n of names) {
    const p = path.join(dir, n);
    const st = await fsp.lstat(p).catch(() => null);
    if (st?.isFile()) out.push({ path: p, size: st.size, dev: st.dev, ino: st.ino });
  }
  return out;
}

async function startsAs(p: string, meta: FileMeta): Promise<boolean> {
  const fh = await fsp.open(p, 'r').catch(() => null);
  if (!fh) return false;
  try {
    return await sameContentStart(fh, (await fh.stat()).size, meta);
  } catch {
    return false;
  } finally {
    await fh.close();
  }
}
