// The records at the end of the dead-letter store's live files when it
// opens, so that a line read again after a crash is not written twice
// (store.ts). Only records of a spool file's line (file and offset known)
// are kept, the last MAX_KEYS of them, each matched once.
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { tailEntries, type DeadLetterRecord } from './files.js';

/**
 * Read at the end of each live file: more than one record of a line at the
 * default `spool.max_line_bytes` (10 MB, base64 a third more), many records
 * of ordinary lines.
 */
export const RECENT_TAIL_BYTES = 16 * 1024 * 1024;
/** All live files together (the most recently written first). */
export const RECENT_TOTAL_BYTES = 64 * 1024 * 1024;
const MAX_KEYS = 4096;

export class RecentRecords {
  private readonly keys = new Set<string>();

  static async read(dir: string): Promise<RecentRecords> {
    const out = new RecentRecords();
    const files: Array<{ file: string; size: number; mtimeMs: number }> = [];
    for (const name of await fsp.readdir(dir)) {
      if (!name.endsWith('.ndjson')) continue;
      const file = path.join(dir, name);
      const st = await fsp.stat(file).catch(() => null);
      if (st?.isFile()) files.push({ file, size: st.size, mtimeMs: st.mtimeMs });
    }
    files.sort((a, b) => b.mtimeMs - a.mtimeMs);
    let budget = RECENT_TOTAL_BYTES;
    for (const f of files) {
      const bytes = Math.min(f.size, RECENT_TAIL_BYTES, budget);
      if (bytes <= 0) break;
      budget -= bytes;
      for await (const e of tailEntries(f.file, bytes)) if (e.rec) out.remember(e.rec);
    }
    return out;
  }

  /** True (and forgotten) when `rec` is a remembered record's line. */
  take(rec: DeadLetterRecord): boolean {
    if (this.keys.size === 0) return false;
    const key = keyOf(rec);
    return key !== null && this.keys.delete(key);
  }

  private remember(rec: DeadLetterRecord): void {
    const key = keyOf(rec);
    if (key === null) return;
    this.keys.delete(key);
    this.keys.add(key);
    if (this.keys.size > MAX_KEYS) this.keys.delete(this.keys.values().next().value!);
  }
}

function keyOf(rec: DeadLetterRecord): string | null {
  if (rec.file == null || rec.offset == null) return null;
  const line = createHash('sha1')
    .update(rec.line !== undefined ? `u${rec.line}` : `b${rec.line_base64 ?? ''}`)
    .digest('hex');
  return JSON.stringify([rec.datasource, rec.reason, rec.file, rec.offset, line]);
}
