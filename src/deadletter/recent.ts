// The records at the end of the dead-letter store's live files when it
// opens, so that a line read again after a crash is not written twice
// (store.ts). Only records of the crash's window are kept: a spool line's
// record (its file's identity, `file_key`, and offset known) whose file the
// state knew at open and whose offset the state had not passed then
// (CrashWindow). Each is matched once, and only while that file is still
// the one the state knew (not forgotten and followed anew under a reused
// inode since). The last MAX_KEYS of them are kept.
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

/** What the state said at the store's open (state/store.ts: a file's progress, the same object for the file's life). */
export interface CrashWindow {
  /** The line of `fileKey` at `offset` may be read again in this run (the state knows the file and has not passed the offset). */
  holds(fileKey: string, offset: number): boolean;
  /** `fileKey` still names the file it named at open. */
  same(fileKey: string): boolean;
}

/** The crash window of a state: `file(key)` is the file's progress, one object for the file's life. */
export function crashWindowOf(state: { file(key: string): { committed: number } | undefined }): CrashWindow {
  const atOpen = new Map<string, object>();
  return {
    holds(fileKey, offset) {
      const f = state.file(fileKey);
      if (!f || offset < f.committed) return false;
      atOpen.set(fileKey, f);
      return true;
    },
    same: (fileKey) => atOpen.has(fileKey) && state.file(fileKey) === atOpen.get(fileKey),
  };
}

export class RecentRecords {
  private readonly keys = new Set<string>();

  constructor(private readonly window: CrashWindow | null = null) {}

  static async read(dir: string, window: CrashWindow): Promise<RecentRecords> {
    const out = new RecentRecords(window);
    const files: Array<{ file: string; size: number; mtimeMs: number }> = [];
    for (const name of await fsp.readdir(dir)) {
      if (!name.endsWith('.ndjson')) continue;
      const file = path.join(dir, name);
      const st = await fsp.stat(file).catch(() => null);
      if (st?.isFile() && st.size > 0) files.push({ file, size: st.size, mtimeMs: st.mtimeMs });
    }
    // The budget goes to the most recently written; they are read last, so
    // that the cap drops the older files' records first.
    files.sort((a, b) => b.mtimeMs - a.mtimeMs);
    let budget = RECENT_TOTAL_BYTES;
    const reads: Array<{ file: string; bytes: number }> = [];
    for (const f of files) {
      const bytes = Math.min(f.size, RECENT_TAIL_BYTES, budget);
      if (bytes <= 0) break;
      budget -= bytes;
      reads.push({ file: f.file, bytes });
    }
    for (const { file, bytes } of reads.reverse()) {
      let any = false;
      for await (const e of tailEntries(file, bytes)) if (e.rec && out.remember(e.rec)) any = true;
      // A record a kill -9 left in the page cache only is durable before the line it stands for is passed.
      if (any) await syncFile(file);
    }
    return out;
  }

  /** True (and forgotten) when `rec` is a remembered record's line. */
  take(rec: DeadLetterRecord): boolean {
    if (this.keys.size === 0 || rec.file_key == null || !this.window?.same(rec.file_key)) return false;
    const key = keyOf(rec);
    return key !== null && this.keys.delete(key);
  }

  private remember(rec: DeadLetterRecord): boolean {
    const key = keyOf(rec);
    if (key === null || !this.window?.holds(rec.file_key!, rec.offset!)) return false;
    this.keys.delete(key);
    this.keys.add(key);
    if (this.keys.size > MAX_KEYS) this.keys.delete(this.keys.values().next().value!);
    return true;
  }
}

function keyOf(rec: DeadLetterRecord): string | null {
  if (rec.file_key == null || rec.offset == null) return null;
  const line = createHash('sha1')
    .update(rec.line !== undefined ? `u${rec.line}` : `b${rec.line_base64 ?? ''}`)
    .digest('hex');
  return JSON.stringify([rec.datasource, rec.reason, rec.file_key, rec.offset, line]);
}

async function syncFile(file: string): Promise<void> {
  const fh = await fsp.open(file, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
