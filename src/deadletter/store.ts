// Dead-letter store: lines that can never be delivered as they are, with why.
//
// On-disk layout: `<state_dir>/dead-letter/<datasource>.ndjson`, one JSON
// record per line (README "Delivery guarantee"): datasource, reason, file, offset, bytes,
// at, status, and `line` (UTF-8) or `line_base64` (not valid UTF-8).
//
// Invariant: `add` resolves only once the record is fsync'd, because the
// caller then lets the file's committed offset pass the line. When the store
// is over `dead_letter.max_bytes`, a new record is dropped (counted and
// reported through `onDrop`, which is told whether the drop begins a
// stretch of drops: the first since the store last took a record) and `add`
// resolves 'dropped'.
//
// A crash after a record's fsync and before the state passes its line (the
// journal's own fsync: tens of ms) reads the line again at the next start.
// `open` remembers the records of that window at the end of each live file
// (recent.ts) and `add` does not write one of them again: same Data Source,
// reason, file identity (`file_key`: device, inode, generation), offset
// and line (for a too-long line the kept head; its `bytes` may differ, the
// first record having been written before the line ended).
import { isUtf8 } from 'node:buffer';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { encodeRecord, liveFile, type DeadLetterReason, type DeadLetterRecord } from './files.js';
import type { LongLived } from '../util/lifecycle.js';
import { DiskRoom } from '../queue/disk-room.js';
import { RecentRecords, type CrashWindow } from './recent.js';

export type { DeadLetterReason, DeadLetterRecord } from './files.js';

export interface DeadLetterInput {
  datasource: string;
  reason: DeadLetterReason;
  file: string | null;
  offset: number | null;
  /** Length of the line in bytes (the whole line, even when `line` is truncated). */
  bytes: number;
  status: number | null;
  line: Buffer;
  /** The spool file's identity (state key) of a line the agent read (the reader's, or a rejected batch's): kept as `file_key` (recent.ts). */
  fileKey?: string;
}

export function toRecord(input: DeadLetterInput, at: Date): DeadLetterRecord {
  const rec: DeadLetterRecord = {
    datasource: input.datasource,
    reason: input.reason,
    file: input.file,
    offset: input.offset,
    bytes: input.bytes,
    at: at.toISOString(),
    status: input.status,
  };
  if (input.fileKey !== undefined) rec.file_key = input.fileKey;
  if (isUtf8(input.line)) rec.line = input.line.toString('utf8');
  else rec.line_base64 = input.line.toString('base64');
  return rec;
}

export function recordLineBytes(rec: DeadLetterRecord): Buffer {
  return rec.line !== undefined ? Buffer.from(rec.line, 'utf8') : Buffer.from(rec.line_base64 ?? '', 'base64');
}

export function deadLetterDir(stateDir: string): string {
  return path.join(stateDir, 'dead-letter');
}

interface Pending {
  ds: string;
  text: string;
  resolve: (r: 'stored' | 'dropped') => void;
  reject: (e: unknown) => void;
}

export class DeadLetterStore implements LongLived {
  private totalBytes = 0;
  private addedSinceRecount = 0;
  private pending: Pending[] = [];
  private draining: Promise<void> | null = null;
  /** The last add was dropped: the next drop does not begin a new stretch. */
  private dropping = false;
  /** The disk queue's reserve of the volume is not written into (queue/disk-room.ts): a full disk (ENOSPC) short of it. */
  private disk: DiskRoom | null = null;
  /** The records at the end of the live files at open (see the head of this file). */
  private recent = new RecentRecords();

  constructor(
    private readonly dir: string,
    private readonly maxBytes: number,
    private readonly now: () => Date,
    private readonly onDrop: (input: DeadLetterInput, firstOfStretch: boolean) => void,
  ) {}

  /** `window`: the state's, when lines the reader rejected may be read again (the agent); without it nothing is remembered. */
  async open(window?: CrashWindow): Promise<void> {
    await fsp.mkdir(this.dir, { recursive: true });
    this.totalBytes = await this.bytesOnDisk();
    this.disk = await DiskRoom.open(this.dir);
    if (window) this.recent = await RecentRecords.read(this.dir, window);
  }

  /**
   * Count the store again from its files: a `dead-letter replay` or `purge`
   * removed records (it tells the running agent through the control
   * channel), so a store that was full takes dead letters again. Records
   * added meanwhile are counted as well (perhaps twice, until the next
   * recount: never too few). Returns the bytes now counted.
   */
  async recount(): Promise<number> {
    // The files changed: what open remembered may be gone.
    this.recent = new RecentRecords();
    this.addedSinceRecount = 0;
    await this.flush();
    const onDisk = await this.bytesOnDisk();
    this.totalBytes = onDisk + this.addedSinceRecount;
    return this.totalBytes;
  }

  /** Live files and files a replay took away (their records are still stored). */
  private async bytesOnDisk(): Promise<number> {
    let n = 0;
    for (const name of await fsp.readdir(this.dir)) {
      if (name.endsWith('.ndjson') || name.endsWith('.ndjson.replaying')) n += (await fsp.stat(path.join(this.dir, name)).catch(() => ({ size: 0 }))).size;
    }
    return n;
  }

  get bytes(): number {
    return this.totalBytes;
  }

  /** Bytes still free (dead_letter.max_bytes less what is stored). */
  get room(): number {
    return Math.max(0, this.maxBytes - this.totalBytes);
  }

  /** Bytes `add(input)` would take on disk. */
  sizeOf(input: DeadLetterInput): number {
    return Buffer.byteLength(encodeRecord(toRecord(input, this.now()))) + 1;
  }

  add(input: DeadLetterInput): Promise<'stored' | 'dropped'> {
    const rec = toRecord(input, this.now());
    if (this.recent.take(rec)) return Promise.resolve('stored');
    const text = `${encodeRecord(rec)}\n`;
    const size = Buffer.byteLength(text);
    if (this.totalBytes + size > this.maxBytes) {
      this.onDrop(input, !this.dropping);
      this.dropping = true;
      return Promise.resolve('dropped');
    }
    this.dropping = false;
    this.totalBytes += size;
    this.addedSinceRecount += size;
    return new Promise((resolve, reject) => {
      this.pending.push({ ds: input.datasource, text, resolve, reject });
      this.kick();
    });
  }

  /**
   * Start draining unless a drain runs. A record added by a caller resumed
   * from the last write of a drain (before the drain's own promise settles)
   * is picked up when it settles: without that, one awaited add after another
   * (queue dead-letter) left the second waiting forever.
   */
  private kick(): void {
    if (this.draining) return;
    this.draining = this.drain().finally(() => {
      this.draining = null;
      if (this.pending.length > 0) this.kick();
    });
  }

  /** Wait until everything added so far is on disk. */
  async flush(): Promise<void> {
    while (this.draining) await this.draining;
  }

  /** Every line added is on disk (each write opens and closes its file: nothing else is held). */
  close(): Promise<void> {
    return this.flush();
  }

  /** Does not wait for the writes under way (a line not yet written is read again from the spool at the next start). */
  async destroy(): Promise<void> {}

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending;
      this.pending = [];
      const byDs = new Map<string, Pending[]>();
      for (const p of batch) {
        let list = byDs.get(p.ds);
        if (!list) byDs.set(p.ds, (list = []));
        list.push(p);
      }
      for (const [ds, list] of byDs) {
        try {
          const text = list.map((p) => p.text).join('');
          await this.disk?.mayWrite(Buffer.byteLength(text));
          const fh = await fsp.open(liveFile(this.dir, ds), 'a');
          const before = (await fh.stat()).size;
          try {
            await fh.writeFile(text);
            await fh.sync();
          } catch (err) {
            // A full disk can take part of the write: cut it off, so the
            // retry (the callers wait out ENOSPC) leaves no torn record.
            await fh.truncate(before).catch(() => undefined);
            throw err;
          } finally {
            await fh.close();
          }
          for (const p of list) p.resolve('stored');
        } catch (err) {
          for (const p of list) {
            this.totalBytes -= Buffer.byteLength(p.text);
            p.reject(err);
          }
        }
      }
    }
  }
}
