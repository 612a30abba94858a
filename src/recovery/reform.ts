// Re-forms batch bodies from recorded file ranges, exactly as the batcher
// built them (the line rules of batcher/lines.ts: empty lines skipped,
// "\r\n" -> "\n", a final line without newline completed): after a crash the resent batch is byte-identical, so
// the platform's 5-hour deduplication of partial inserts applies.
// A range is re-formed only from the bytes it had: the file must still start
// with its fingerprint and the range's bytes must have the CRC its intent
// kept. After a copytruncate or an inode reused by a new file, the same
// offsets hold other lines; sending them as the batch sent wrong lines (and
// a split last line) in place of the lost ones, so such a range counts as
// gone (README "Delivery guarantee").
// Also locates a batch's lines in their files (for dead-letter records).
import { promises as fsp } from 'node:fs';
import { crc32 } from '../util/crc32.js';
import type { FileHandle } from 'node:fs/promises';
import { contentEnd, lineEnd } from '../batcher/lines.js';
import type { FileMeta, RangeRecord } from '../state/journal.js';
import { sameContentStart } from '../spool/identity.js';
import { locateByIdentity } from '../spool/relocate.js';
import { CopyFinder } from './copies.js';

export interface LineLocation {
  file: string;
  offset: number;
  /** The file's state key (the batch range's). */
  key: string;
}

/** Identity of a tracked file: a path is only trusted while it still names this file. */
export type IdentityOf = (key: string) => FileMeta | undefined;

/** The file open at p (or found again by identity), 'changed' when its inode now starts with other bytes, null when gone. */
async function openVerified(p: string, meta: FileMeta | undefined): Promise<FileHandle | 'changed' | null> {
  const tryOpen = async (q: string): Promise<FileHandle | 'changed' | null> => {
    const fh = await fsp.open(q, 'r').catch(() => null);
    if (!fh || !meta) return fh;
    const st = await fh.stat();
    if (st.dev === meta.dev && st.ino === meta.ino) {
      // Same inode, other first bytes: a new file under a reused inode, or
      // one truncated and written again (copytruncate).
      if (meta.fpLen === 0 || (await sameContentStart(fh, st.size, meta))) return fh;
      await fh.close();
      return 'changed';
    }
    await fh.close();
    return null;
  };
  const fh = await tryOpen(p);
  if (fh || !meta) return fh;
  // Renamed since its path was recorded (rotation while the agent was down or starting).
  const q = await locateByIdentity(meta);
  return q ? tryOpen(q) : null;
}

async function readRange(p: string, start: number, end: number, meta?: FileMeta): Promise<Buffer | null> {
  const r = await readRangeOr(p, start, end, meta);
  return Buffer.isBuffer(r) ? r : null;
}

/** The range's bytes, or why not: 'gone' (no such file, or shorter), 'changed' (its inode starts with other bytes now). */
async function readRangeOr(p: string, start: number, end: number, meta?: FileMeta): Promise<Buffer | 'gone' | 'changed'> {
  let fh;
  try {
    const opened = await openVerified(p, meta);
    if (opened === 'changed') return opened;
    if (!opened) return 'gone';
    fh = opened;
    const buf = Buffer.allocUnsafe(end - start);
    let got = 0;
    while (got < buf.length) {
      const { bytesRead } = await fh.read(buf, got, buf.length - got, start + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    // A short read means the range is not what was recorded: never send part
    // of it as if whole. The one exception: journals and queues written
    // before the change in CHANGELOG ("a finished file's remainder") record
    // that remainder one byte past the file's end (the newline the agent
    // added), so exactly one byte short, not ending in a newline, is that line.
    if (got === buf.length) return buf;
    if (got === buf.length - 1 && got > 0 && buf[got - 1] !== 10) return buf.subarray(0, got);
    return 'gone';
  } catch {
    return 'gone';
  } finally {
    await fh?.close();
  }
}

/** Visit the non-empty lines of `data` (file offset `base`): content without CR/LF, and the offset after the line's terminator. */
function eachLine(data: Buffer, base: number, fn: (content: Buffer, offset: number, after: number) => void): void {
  let pos = 0;
  while (pos < data.length) {
    const nl = lineEnd(data, pos, data.length);
    const end = contentEnd(data, pos, nl);
    if (end > pos) fn(data.subarray(pos, end), base + pos, base + Math.min(nl + 1, data.length));
    pos = nl + 1;
  }
}

/** CRC-32 of each range's file bytes now (null where the file cannot be read): kept with a queued batch, so a damaged queue record can be re-read from the spool only when the bytes are still the same. */
export async function rangeCrcs(ranges: readonly RangeRecord[], pathOf: (key: string) => string | undefined, identityOf?: IdentityOf): Promise<Array<number | null>> {
  const out: Array<number | null> = [];
  for (const r of ranges) {
    const p = pathOf(r.file);
    const data = p ? await readRange(p, r.start, r.end, identityOf?.(r.file)) : null;
    out.push(data ? crc32(data) : null);
  }
  return out;
}

export interface ReformResult {
  body: Buffer;
  lines: number;
  /** Ranges whose bytes are gone: the file deleted, truncated, or holding other bytes there now. */
  missing: RangeRecord[];
  /** How many of `missing` hold other bytes than the batch took (other first bytes, or another CRC). */
  changed: number;
  /** Ranges read from a copy of their file (copytruncate, copies.ts): [the file's path, the copy's]. */
  fromCopies: Array<[string, string]>;
}

const NEWLINE = Buffer.from('\n');

/** Do `data`, read back for range r, have the CRC the intent kept? (No CRC kept: trusted, as before CRCs existed.) */
function sameBytes(r: RangeRecord & { crc?: number | null }, data: Buffer): boolean {
  if (typeof r.crc !== 'number') return true;
  const crc = crc32(data);
  if (crc === r.crc) return true;
  // A finished file's remainder as older records have it: with the
  // newline the agent added (a queued record's CRC, rangeCrcs, is of the
  // file's bytes alone). Now its range ends at the file's end.
  return data.length === r.end - r.start - 1 && crc32(NEWLINE, crc) === r.crc;
}

/** Where re-forming looks for copies of files (copies.ts): one for a whole recovery, so each directory is listed once. */
export function copyFinder(): CopyFinder {
  return new CopyFinder((q, start, end) => readRange(q, start, end), sameBytes);
}

export async function reformBatch(
  ranges: ReadonlyArray<RangeRecord & { crc?: number | null }>,
  pathOf: (key: string) => string | undefined,
  identityOf?: IdentityOf,
  copies: CopyFinder = copyFinder(),
): Promise<ReformResult> {
  const parts: Buffer[] = [];
  const missing: RangeRecord[] = [];
  const fromCopies: Array<[string, string]> = [];
  let changed = 0;
  let lines = 0;
  const nl = NEWLINE;
  for (const r of ranges) {
    const p = pathOf(r.file);
    const meta = identityOf?.(r.file);
    let data = p ? await readRangeOr(p, r.start, r.end, meta) : 'gone';
    if (!Buffer.isBuffer(data) || !sameBytes(r, data)) {
      const copy = p && meta ? await copies.read(p, meta, r) : null;
      if (!copy) {
        if (data !== 'gone') changed++;
        missing.push(r);
        continue;
      }
      data = copy.data;
      fromCopies.push([p!, copy.copy]);
    }
    eachLine(data, r.start, (content) => {
      parts.push(content, nl);
      lines++;
    });
  }
  return { body: Buffer.concat(parts), lines, missing, changed, fromCopies };
}

/**
 * Walk the non-empty lines of a batch's `ranges` in order, numbered from 0,
 * until line `until` (the range holding it is walked to its end): `fn` gets
 * the range, its file's path, the line's number, its offset and the offset
 * after its terminator. Returns how many lines were walked: fewer than
 * `until` when a file cannot be read or the ranges hold fewer lines.
 */
async function walkBatchLines(
  ranges: readonly RangeRecord[],
  pathOf: (key: string) => string | undefined,
  until: number,
  fn: (range: RangeRecord, path: string, index: number, offset: number, after: number) => void,
  identityOf?: IdentityOf,
): Promise<number> {
  let index = 0;
  for (const r of ranges) {
    if (index >= until) break;
    const p = pathOf(r.file);
    const data = p ? await readRange(p, r.start, r.end, identityOf?.(r.file)) : null;
    if (!p || !data) break;
    eachLine(data, r.start, (_c, offset, after) => fn(r, p, index++, offset, after));
  }
  return index;
}

/**
 * The file ranges that hold each span of lines [first, first + count) of a
 * batch with `ranges` (spans sorted by `first`, not overlapping): re-formed,
 * they give exactly those lines (the pieces of a batch cut by 400s, queued on
 * their own). One pass over the ranges for every span. A span is null when
 * a file it needs cannot be read, or the ranges hold fewer lines.
 */
export async function lineRanges(
  ranges: readonly RangeRecord[],
  pathOf: (key: string) => string | undefined,
  spans: ReadonlyArray<{ first: number; count: number }>,
  identityOf?: IdentityOf,
): Promise<Array<RangeRecord[] | null>> {
  const found: RangeRecord[][] = spans.map(() => []);
  /** The batch range each span's last found range lies in: a span's lines in one batch range make one range. */
  const lastFrom: Array<RangeRecord | undefined> = [];
  const until = spans.reduce((n, s) => Math.max(n, s.first + s.count), 0);
  let at = 0;
  const walked = await walkBatchLines(
    ranges,
    pathOf,
    until,
    (r, _p, index, offset, after) => {
      while (at < spans.length && index >= spans[at]!.first + spans[at]!.count) at++;
      const s = spans[at];
      if (!s || index < s.first) return;
      const mine = found[at]!;
      if (lastFrom[at] === r) mine[mine.length - 1]!.end = after;
      else {
        mine.push({ file: r.file, start: offset, end: after });
        lastFrom[at] = r;
      }
    },
    identityOf,
  );
  return spans.map((s, i) => (walked >= s.first + s.count ? found[i]! : null));
}

/** File and offset of lines [first, first + count) of a batch, or null where unknown. */
export async function locateLines(
  ranges: readonly RangeRecord[],
  pathOf: (key: string) => string | undefined,
  first: number,
  count: number,
): Promise<Array<LineLocation | null>> {
  const out: Array<LineLocation | null> = new Array(count).fill(null);
  await walkBatchLines(ranges, pathOf, first + count, (r, p, index, offset) => {
    if (index >= first && index < first + count) out[index - first] = { file: p, offset, key: r.file };
  });
  return out;
}
