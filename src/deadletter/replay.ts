// `dead-letter replay`: resend the selected records; remove those that are
// acknowledged; keep a line rejected again with the new answer (reason,
// status, at); keep everything else byte for byte.
//
// The agent appends to `<ds>.ndjson` by opening it by name for every write
// (store.ts), so a replay never edits that file in place. Per Data Source:
//
//   1. rename `<ds>.ndjson` -> `<ds>.ndjson.replaying`, fsync the directory.
//      From here the agent's new dead letters go to a fresh `<ds>.ndjson`.
//   2. stream the taken file in windows (max_in_flight x batch.max_bytes of
//      lines; a file is never read whole): send the window's selected lines
//      (in batches of up to batch.max_bytes, max_in_flight at once, the
//      Sender's own retries and 400 bisection), then
//   3. append every record of the window that stays (not selected, rejected
//      again, not sent, unreadable) to `<ds>.ndjson` and fsync it and the
//      directory; next window.
//   4. unlink `<ds>.ndjson.replaying`, fsync the directory.
//
// Crash safety: until 4 every record is in the taken file; after each 3
// every record of the windows so far that stays is in `<ds>.ndjson`. The
// taken file goes only after the last window (4). So a record is never
// lost. A crash between 1 and 4 leaves the taken file behind: `list` shows it
// and the next replay processes it first (then takes the live file). The
// costs are duplicates, never gaps: after each 3 the number of entries done
// is recorded (replay-progress.ts), and the next replay, purge and listing
// skip them; only the window under way at the crash is sent again (and its
// records kept may be in both files). A torn append (crash inside 3) is read
// back tolerantly (files.ts).
//
// One replay per state_dir at a time: `dead-letter/spoolship.lock` (the
// state lock module; a dead holder's lock is taken over).
import { promises as fsp } from 'node:fs';
import { FatalIoError, StateLockedError, UsageError } from '../errors.js';
import { acquireLock, type LockEvent } from '../state/lock.js';
import { fsyncDir } from '../util/fsx.js';
import { encodeRecord, listDeadLetterFiles, liveFile, matches, pendingEntries, replayingFile, specRecord, streamEntries, type Entry, type Filter } from './files.js';
import { clearDone, entriesDone, markDone } from './replay-progress.js';
import type { LineResult, LineSender, StopReason } from './replay-sender.js';
import { recordLineBytes, type DeadLetterRecord } from './store.js';

export interface ReplayOptions {
  dir: string;
  filter: Filter;
  /** batch.max_bytes: uncompressed request body. */
  maxBatchBytes: number;
  /** limits.max_in_flight: batches sent at once. */
  concurrency: number;
  sender: LineSender;
  now: () => Date;
  /** The replay lock's fallback or wait, for the command to say. */
  onLockEvent?: (e: LockEvent) => void;
}

export interface ReplaySummary {
  /** Records matching the selection that the replay reached (all of them unless it stopped). */
  selected: number;
  acknowledged: number;
  /** Rejected again: kept with the new answer. */
  rejected: number;
  /** Not sent because the replay stopped: kept as they were. */
  not_sent: number;
  /** Stored truncated (line_too_long keeps only the first max_line_bytes): never resent. */
  skipped_truncated: number;
  /** Records matching the selection in the store after the replay. */
  remaining: number;
  stopped: StopReason | null;
}

export async function replayDeadLetters(o: ReplayOptions): Promise<ReplaySummary> {
  const sum: ReplaySummary = { selected: 0, acknowledged: 0, rejected: 0, not_sent: 0, skipped_truncated: 0, remaining: 0, stopped: null };
  if ((await listDeadLetterFiles(o.dir, o.filter.datasource)).length === 0) return sum;
  const lock = await acquireReplayLock(o.dir, o.onLockEvent);
  try {
    const names = [...new Set((await listDeadLetterFiles(o.dir, o.filter.datasource)).map((f) => f.ds))];
    for (const ds of names) {
      // Stopped (token rejected, Ctrl-C): leave the other Data Sources alone.
      if (o.sender.stopReason) break;
      // A leftover of a crashed replay first: it may hold the oldest records.
      // What it puts back into the live file (rejected again, never sendable)
      // was reached by this run, and lands after the records there now: the
      // live file's pass selects only as many as match now.
      const before = (await exists(replayingFile(o.dir, ds))) ? await countMatching(liveFile(o.dir, ds), o.filter) : Infinity;
      await processTaken(ds, o, sum);
      if (o.sender.stopReason) break;
      if (await takeLiveFile(o.dir, ds, o.filter)) await processTaken(ds, o, sum, before);
    }
    sum.stopped = o.sender.stopReason;
    for (const ds of names) {
      for (const file of [replayingFile(o.dir, ds), liveFile(o.dir, ds)]) {
        for await (const e of pendingEntries(file)) if (e.rec && matches(e.rec, o.filter)) sum.remaining++;
      }
    }
    return sum;
  } finally {
    await lock.release();
  }
}

export async function acquireReplayLock(dir: string, onEvent?: (e: LockEvent) => void): Promise<{ release(): Promise<void> }> {
  try {
    return await acquireLock(dir, { onEvent });
  } catch (err) {
    if (err instanceof StateLockedError) {
      throw new UsageError(`another dead-letter replay (pid ${err.holderPid ?? 'unknown'}) is running on ${dir}; wait for it to finish`);
    }
    throw err;
  }
}

/** Step 1: take the live file away, unless it has nothing to replay. */
export async function takeLiveFile(dir: string, ds: string, filter: Filter): Promise<boolean> {
  let any = false;
  for await (const e of streamEntries(liveFile(dir, ds))) {
    if (e.rec && matches(e.rec, filter)) {
      any = true;
      break;
    }
  }
  if (!any) return false;
  await fsp.rename(liveFile(dir, ds), replayingFile(dir, ds));
  await fsyncDir(dir);
  return true;
}

async function countMatching(file: string, filter: Filter): Promise<number> {
  let n = 0;
  for await (const e of streamEntries(file)) if (e.rec && matches(e.rec, filter)) n++;
  return n;
}

/**
 * Steps 2-4 for `<ds>.ndjson.replaying`, if it exists. The first `limit`
 * matching records are selected; later ones are left as they are.
 */
async function processTaken(ds: string, o: ReplayOptions, sum: ReplaySummary, limit = Infinity): Promise<void> {
  const taken = replayingFile(o.dir, ds);
  if (!(await exists(taken))) return;
  const windowBytes = o.maxBatchBytes * Math.max(1, o.concurrency);
  // Entries an interrupted replay finished are skipped (replay-progress.ts).
  const skip = await entriesDone(taken);
  let done = skip;
  let picked = 0;
  let window: Entry[] = [];
  let bytes = 0;
  const flush = async () => {
    const selected: number[] = [];
    for (let i = 0; i < window.length; i++) {
      const rec = window[i]!.rec;
      if (!rec || !matches(rec, o.filter) || picked >= limit) continue;
      picked++;
      sum.selected++;
      const line = recordLineBytes(rec);
      if (line.length !== rec.bytes || line.length === 0) sum.skipped_truncated++;
      else selected.push(i);
    }
    const keep = survivors(window, await sendAll(ds, window, selected, o), sum, o.now);
    try {
      await appendDurably(o.dir, liveFile(o.dir, ds), keep);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? String(err);
      throw new FatalIoError(`could not put ${keep.length} record(s) back into ${liveFile(o.dir, ds)} (${code}); they are safe in ${taken}: fix the cause (disk space?) and run replay again`, err);
    }
    done += window.length;
    if (window.length > 0) await markDone(taken, done);
    window = [];
    bytes = 0;
  };
  for await (const e of streamEntries(taken, skip)) {
    window.push(e);
    bytes += e.raw.length;
    if (bytes >= windowBytes) await flush();
  }
  await flush();
  await clearDone(taken);
  await fsp.rm(taken);
  await fsyncDir(o.dir);
}

export async function exists(file: string): Promise<boolean> {
  try {
    await fsp.access(file);
    return true;
  } catch {
    return false;
  }
}

/** The lines that stay, in file order: unselected and unsent ones as they were, rejected ones with the new answer. */
function survivors(entries: Entry[], answers: Map<number, LineResult>, sum: ReplaySummary, now: () => Date): string[] {
  const keep: string[] = [];
  for (let i = 0; i < entries.length; i++) {
    const a = answers.get(i);
    const e = entries[i]!;
    if (!a) keep.push(e.raw);
    else if (a.kind === 'ack') sum.acknowledged++;
    else if (a.kind === 'rejected') {
      sum.rejected++;
      keep.push(encodeRecord(specRecord({ ...e.rec!, reason: a.reason, status: a.status, at: now().toISOString() } satisfies DeadLetterRecord)));
    } else {
      sum.not_sent++;
      keep.push(e.raw);
    }
  }
  return keep;
}

/** Batches of whole lines up to maxBatchBytes (a larger line alone), sent `concurrency` at a time. */
async function sendAll(ds: string, entries: Entry[], selected: number[], o: ReplayOptions): Promise<Map<number, LineResult>> {
  const batches: number[][] = [];
  let cur: number[] = [];
  let curBytes = 0;
  for (const i of selected) {
    const size = entries[i]!.rec!.bytes + 1;
    if (cur.length > 0 && curBytes + size > o.maxBatchBytes) {
      batches.push(cur);
      cur = [];
      curBytes = 0;
    }
    cur.push(i);
    curBytes += size;
  }
  if (cur.length > 0) batches.push(cur);
  const answers = new Map<number, LineResult>();
  let next = 0;
  const worker = async () => {
    while (next < batches.length) {
      const batch = batches[next++]!;
      const results = await o.sender.send(
        ds,
        batch.map((i) => recordLineBytes(entries[i]!.rec!)),
      );
      batch.forEach((i, k) => answers.set(i, results[k]!));
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(o.concurrency, batches.length)) }, worker));
  return answers;
}

/** Step 3: append whole lines, after a newline if a torn write left the file without one. */
export async function appendDurably(dir: string, file: string, lines: string[]): Promise<void> {
  if (lines.length === 0) return;
  const fh = await fsp.open(file, 'a+');
  try {
    const { size } = await fh.stat();
    let lead = '';
    if (size > 0) {
      const last = Buffer.alloc(1);
      await fh.read(last, 0, 1, size - 1);
      if (last[0] !== 10) lead = '\n';
    }
    await fh.writeFile(`${lead}${lines.join('\n')}\n`);
    await fh.sync();
  } finally {
    await fh.close();
  }
  // The file may have just been created: make its name durable too.
  await fsyncDir(dir);
}
