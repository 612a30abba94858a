// Append-only journal of batch intents, acknowledgements and file records.
//
// Invariants:
// - An intent is durable (fsync'd) before its batch is first sent, so a batch
//   in flight at a crash is re-formed from the same ranges, byte-identical.
// - Acks reach disk within `groupCommitMs` (100 ms): a crash re-sends at most
//   the batches in flight plus those acked in the last 100 ms.
// - Records are CRC-framed (util/framing.ts); a torn tail is cut off on load.
//
// On-disk layout: `<state_dir>/journal-<seq>.log`, a sequence of framed JSON
// records (see JournalRecord). The checkpoint names the first journal seq to
// replay; older journals are deleted after the next checkpoint.
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { crashNow, shouldCrash } from '../util/crashpoint.js';
import { frame, unframeAll } from '../util/framing.js';
import { StateTooNewError } from '../errors.js';
import { DestroyedError } from '../util/lifecycle.js';

export interface RangeRecord {
  file: string;
  start: number;
  end: number;
}

/**
 * A range of a batch's intent, with the CRC-32 (util/crc32.ts, zlib.crc32's value) of the bytes the
 * batch took from it (a finished file's remainder with the newline the agent
 * added). Re-forming after a crash sends the range only when the file still
 * holds those bytes: after a copytruncate or an inode reused by a new file
 * the offsets hold other lines (absent in intents written before it existed).
 */
export interface IntentRange extends RangeRecord {
  crc?: number;
}

export interface FileMeta {
  key: string;
  dev: number;
  ino: number;
  gen: number;
  fp: string;
  fpLen: number;
  path: string;
  ds: string;
  /** `path` is where it was renamed to, out of the patterns (on_complete: delete may delete it, after a restart too). */
  away?: true;
  /** Found through a symlink to outside spool.dir and the sources directories (follow_symlinks: any): on_complete: delete never deletes it. */
  linkedOutside?: true;
  /** The offset of a too-long line dead-lettered before its end was written: read again from there, it is not written again. */
  lettered?: number;
}

/**
 * The journal's format version. Every journal file written since it existed
 * starts with `{"t":"v","v":1}`; a file without one was written before, in
 * the same format. A newer version stops the start (StateTooNewError).
 */
export const JOURNAL_VERSION = 1;

export type JournalRecord =
  /** The file's format version: its first record, not replayed. */
  | { t: 'v'; v: number }
  /** A file followed (`from`: where its reading began when above 0, `start_at: end`; absent on a rename's update). */
  | ({ t: 'f'; from?: number } & FileMeta)
  | { t: 'i'; id: number; ds: string; ranges: IntentRange[]; at: number; lines?: number; resend?: boolean }
  | { t: 'a'; id: number }
  | { t: 'd'; ranges: RangeRecord[] }
  | { t: 'x'; key: string }
  | ({ t: 'q' } & QueuedIntent)
  | { t: 'qa'; id: number };

/**
 * A batch durably in the disk queue: its file ranges with the CRC-32 of each
 * range's bytes when it was queued (null: unreadable then). If its queue
 * record is damaged, the lines are read again from the spool when every
 * range still has that CRC; otherwise they are counted as lost.
 */
export interface QueuedIntent {
  id: number;
  ds: string;
  lines: number;
  ranges: Array<RangeRecord & { crc: number | null }>;
}

export const GROUP_COMMIT_MS = 100;
/**
 * The group-commit timer fires this long after the first buffered record.
 * Half the window, not all of it: the write and the fsync come after the
 * timer, and with a 100 ms timer acks reached disk only after 100 ms plus an
 * fsync, so a kill -9 re-sent batches acked more than 100 ms before it (the
 * process suite's duplicate bound caught it).
 */
const FLUSH_AFTER_MS = GROUP_COMMIT_MS / 2;

export function journalPath(stateDir: string, seq: number): string {
  return path.join(stateDir, `journal-${String(seq).padStart(8, '0')}.log`);
}

export async function listJournals(stateDir: string): Promise<number[]> {
  const names = await fsp.readdir(stateDir).catch(() => [] as string[]);
  return names
    .map((n) => /^journal-(\d+)\.log$/.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
}

export interface JournalReadResult {
  records: JournalRecord[];
  tornTail: boolean;
  /** Damaged byte ranges (not a torn tail): their records are lost, the ones after them read. */
  corrupt: Array<{ start: number; end: number }>;
}

/** A journal record is a JSON object: `{` ... `}`. */
const looksLikeRecord = (p: Buffer): boolean => p.length >= 2 && p[0] === 0x7b && p[p.length - 1] === 0x7d;

/** Read a journal; with `repair`, cut a torn tail off the file (the agent; `status` reads only). */
export async function readJournal(file: string, repair = true): Promise<JournalReadResult> {
  const data = await fsp.readFile(file);
  const { payloads, validBytes, tornTail, corrupt } = unframeAll(data, looksLikeRecord);
  if (tornTail && repair) await fsp.truncate(file, validBytes);
  const records: JournalRecord[] = [];
  for (const p of payloads) {
    const r = JSON.parse(p.toString('utf8')) as JournalRecord;
    if (r.t !== 'v') records.push(r);
    else if (r.v !== JOURNAL_VERSION) throw new StateTooNewError(file, r.v, JOURNAL_VERSION);
  }
  return { records, tornTail, corrupt };
}

/** Writer for the current journal file with group commit. */
export class JournalWriter {
  private fh: FileHandle | null = null;
  private pending: Buffer[] = [];
  private waiters: Array<{ resolve: () => void; reject: (e: unknown) => void }> = [];
  private flushing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** Closed or destroyed (a stop, a failed start): a write still under way, or tried after, ends as abandoned work, not as an error of its own ("file closed"). */
  private ended = false;
  /** Bytes durably framed in the file (where a failed write is cut back to). */
  private fileBytes = 0;
  bytes = 0;

  constructor(
    readonly file: string,
    private readonly onError: (err: unknown) => void,
    /**
     * The journal this one follows (a checkpoint's switch): closed before
     * this one writes anything, so records reach disk in the order they
     * were appended, whatever fails in between.
     */
    private predecessor: JournalWriter | null = null,
  ) {}

  /** A checkpoint switched to this journal and the previous one is not closed yet (its last write failed). */
  get switching(): boolean {
    return this.predecessor !== null;
  }

  /** Write what the previous journal still buffers and close it (a failure leaves it for the next try). */
  async closePredecessor(): Promise<void> {
    if (!this.predecessor) return;
    await this.predecessor.close();
    this.predecessor = null;
  }

  async open(): Promise<void> {
    this.fh = await fsp.open(this.file, 'a');
    this.bytes = (await this.fh.stat()).size;
    this.fileBytes = this.bytes;
    // A new file says its format first (written with the first records).
    if (this.bytes === 0) this.append({ t: 'v', v: JOURNAL_VERSION });
  }

  /** Buffer a record; it reaches disk within GROUP_COMMIT_MS. */
  append(rec: JournalRecord): void {
    const b = frame(Buffer.from(JSON.stringify(rec)));
    this.pending.push(b);
    this.bytes += b.length;
    if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.flush().catch(this.onError);
      }, FLUSH_AFTER_MS);
    }
  }

  /** Append and wait until the record (and everything before it) is fsync'd. */
  async appendDurable(rec: JournalRecord): Promise<void> {
    this.append(rec);
    await this.flush();
  }

  /** Write and fsync everything appended so far; concurrent callers share one fsync. */
  async flush(): Promise<void> {
    if (this.pending.length === 0 && !this.flushing) return;
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (!this.flushing) this.flushing = this.drain();
    return done;
  }

  private async drain(): Promise<void> {
    try {
      // A waiter that arrived while an earlier write was running waits for
      // the next round, even when that round has no new bytes.
      while (this.pending.length > 0 || this.waiters.length > 0) {
        const bufs = this.pending;
        const waiters = this.waiters;
        this.pending = [];
        this.waiters = [];
        try {
          await this.closePredecessor();
          if (bufs.length > 0) {
            if (!this.fh) throw new Error('journal is closed');
            if (shouldCrash('journal-write')) {
              // Test crash point: die with this group on disk up to half of
              // its last record (a torn tail). Half of the whole group could
              // end on a record boundary (two records of one size): no tear.
              const all = Buffer.concat(bufs);
              await this.fh.write(all, 0, all.length - bufs[bufs.length - 1]!.length + (bufs[bufs.length - 1]!.length >> 1));
              crashNow();
            }
            await this.writeWhole(bufs);
            await this.fh.sync();
          }
          for (const w of waiters) w.resolve();
        } catch (err) {
          // The records are not durable: put them back so a later flush
          // retries them (ENOSPC clears when space returns).
          this.pending = bufs.concat(this.pending);
          if (this.ended) err = new DestroyedError('the journal');
          // Every waiter hears of it, including those queued for the next
          // round (they would otherwise wait for a flush nobody starts). The
          // error is not rethrown: nobody awaits `flushing` itself, so a
          // rethrow was an unhandled rejection that killed the process on
          // the first ENOSPC instead of reporting disk_full.
          for (const w of waiters.concat(this.waiters.splice(0))) w.reject(err);
          return;
        }
      }
    } finally {
      this.flushing = null;
    }
  }

  /**
   * Write every byte or none: on a nearly full disk write(2) stores what fits
   * and returns a short count, then ENOSPC. Ignoring the short count left a
   * torn record in the middle of the journal, and recovery stops reading at
   * the first torn record, so every record written after the disk-full
   * episode was dropped at the next start. Cut a partial group off again.
   */
  private async writeWhole(bufs: Buffer[]): Promise<void> {
    const fh = this.fh!;
    const data = bufs.length === 1 ? bufs[0]! : Buffer.concat(bufs);
    const start = this.fileBytes;
    let off = 0;
    try {
      while (off < data.length) {
        const { bytesWritten } = await fh.write(data, off, data.length - off);
        if (bytesWritten === 0) throw Object.assign(new Error('journal write stored nothing'), { code: 'ENOSPC' });
        off += bytesWritten;
      }
    } catch (err) {
      if (off > 0) await fh.truncate(start).catch(() => undefined);
      throw err;
    }
    this.fileBytes = start + data.length;
  }

  /** Write what is buffered and close the file; a failed write leaves it open for another try. */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.flush();
    // Taken before the await: two closes never close one handle twice.
    const fh = this.fh;
    this.fh = null;
    this.ended = true;
    await fh?.close();
  }

  /** Close the file (and a predecessor's) without writing the records still buffered (the next start replays what is on disk). */
  async destroy(): Promise<void> {
    this.ended = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const fh = this.fh;
    this.fh = null;
    const before = this.predecessor;
    this.predecessor = null;
    await Promise.all([fh?.close().catch(() => undefined), before?.destroy()]);
  }
}
