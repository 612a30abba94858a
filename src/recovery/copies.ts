// A batch's range read back from a copy of its file, when the file itself no
// longer has those bytes (README "Delivery guarantee"). logrotate's
// copytruncate copies the file beside it (`app.log.1`, a name out of the
// patterns, or in its olddir) and then truncates it: a batch unanswered at a
// kill -9 just before was counted lost at the restart although its bytes
// were one directory entry away. A copy is used only when it starts with the
// file's fingerprint and the range's bytes have the CRC the batch's intent
// kept (reform.ts), so no other lines can take the batch's place. A rotated
// file already compressed, or deleted, has no such copy: those lines stay
// lost.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { FileMeta, RangeRecord } from '../state/journal.js';
import { sameContentStart } from '../spool/identity.js';
import { regularFilesIn, nearbyDirs } from '../spool/walk.js';

type Range = RangeRecord & { crc?: number | null };

export type ReadRange = (p: string, start: number, end: number) => Promise<Buffer | null>;

/** Copies looked up for one recovery: each directory is listed once (all of it: a cap hid a copy that sorted after 10,000 other names), each candidate's first bytes read once. */
export class CopyFinder {
  private readonly listed = new Map<string, ReturnType<typeof regularFilesIn>>();
  private readonly starts = new Map<string, Promise<boolean>>();

  constructor(
    private readonly readRange: ReadRange,
    private readonly sameBytes: (r: Range, data: Buffer) => boolean,
  ) {}

  /**
   * The range's bytes from a copy of `meta`'s file, with the CRC `r` kept;
   * null when there is none. Looked for where relocation looks for a renamed
   * file (spool/relocate.ts): the file's directory, then logrotate's olddir
   * places near it (walk.ts nearbyDirs).
   */
  async read(filePath: string, meta: FileMeta, r: Range): Promise<{ data: Buffer; copy: string } | null> {
    if (typeof r.crc !== 'number' || meta.fpLen === 0) return null;
    const dir = path.dirname(filePath);
    for (const d of [dir, ...(await nearbyDirs(dir))]) {
      let files = this.listed.get(d);
      if (!files) this.listed.set(d, (files = regularFilesIn(d)));
      for (const f of await files) {
        if ((f.dev === meta.dev && f.ino === meta.ino) || f.size < r.end) continue;
        let same = this.starts.get(`${f.path}\0${meta.key}`);
        if (!same) this.starts.set(`${f.path}\0${meta.key}`, (same = startsAs(f.path, meta)));
        if (!(await same)) continue;
        const data = await this.readRange(f.path, r.start, r.end);
        if (data && this.sameBytes(r, data)) return { data, copy: f.path };
      }
    }
    return null;
  }
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
