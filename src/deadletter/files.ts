// Reading the dead-letter store for `dead-letter list|replay` (layout in
// store.ts): `<ds>.ndjson` (a name over 200 characters cut: stemOf), plus
// `<ds>.ndjson.replaying`, the file a replay
// took away (replay.ts); one left by a crashed replay still holds records,
// so it is listed and replayed like the live file.
//
// Parsing is tolerant: a write torn by a crash leaves a fragment without its
// newline, and the next append is glued to it. The glued record is split
// off and read; the fragment is kept as an unreadable line (never dropped:
// we cannot prove it is a copy).
//
// Record format, version 2: the JSON object of the record's fields, then
// `"v":2` and `"crc32":"<8 hex>"` as its last two keys; the CRC (zlib.crc32)
// covers the line up to `,"crc32":` with the closing `}`. A line whose CRC
// does not match is unreadable (listed as such, never replayed). Version 1
// lines (no `v`, no CRC) are read as they are.
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import readline from 'node:readline';
import zlib from 'node:zlib';
import { cutName, LONG_NAME_PREFIX_CHARS } from '../util/long-name.js';
import { entriesDone } from './replay-progress.js';

export const REPLAYING_SUFFIX = '.ndjson.replaying';
/** `operator`: moved there by `spoolship queue dead-letter` (a batch the platform will never accept). */
export const DEAD_LETTER_REASONS = ['line_too_long', 'invalid_json', 'rejected', 'materialized_view_error', 'operator'] as const;
export type DeadLetterReason = (typeof DEAD_LETTER_REASONS)[number];

/** One dead letter as stored: a line of a dead-letter file. */
export interface DeadLetterRecord {
  datasource: string;
  reason: DeadLetterReason;
  file: string | null;
  offset: number | null;
  bytes: number;
  at: string;
  status: number | null;
  /** A spool line the reader rejected: its file's identity (store.ts); not listed. */
  file_key?: string;
  line?: string;
  line_base64?: string;
}

const RECORD_START = '{"datasource":';

export interface DeadLetterFile {
  ds: string;
  path: string;
  /** True for a file taken away by a replay (running, or crashed). */
  replaying: boolean;
}

/** One line of a dead-letter file: the record, or null when it cannot be read. */
export interface Entry {
  raw: string;
  rec: DeadLetterRecord | null;
}

export interface Filter {
  datasource?: string;
  reason?: string;
}

/** The file name's stem for a Data Source: its name, cut (util/long-name.ts) when longer than the cut form's prefix, so that `.ndjson.replaying` fits too. */
export function stemOf(ds: string): string {
  return ds.length <= LONG_NAME_PREFIX_CHARS ? ds : cutName(ds);
}

export function liveFile(dir: string, ds: string): string {
  return path.join(dir, `${stemOf(ds)}.ndjson`);
}

export function replayingFile(dir: string, ds: string): string {
  return path.join(dir, `${stemOf(ds)}${REPLAYING_SUFFIX}`);
}

export async function listDeadLetterFiles(dir: string, datasource?: string): Promise<DeadLetterFile[]> {
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: DeadLetterFile[] = [];
  for (const name of names.sort()) {
    const replaying = name.endsWith(REPLAYING_SUFFIX);
    if (!replaying && !name.endsWith('.ndjson')) continue;
    const stem = name.slice(0, name.length - (replaying ? REPLAYING_SUFFIX.length : '.ndjson'.length));
    if (stem === '' || (datasource !== undefined && stem !== stemOf(datasource))) continue;
    const file = path.join(dir, name);
    // A long name's file holds it in its records (the stem is cut).
    const ds = datasource ?? (stem.includes('.') ? ((await datasourceIn(file)) ?? stem) : stem);
    out.push({ ds, path: file, replaying });
  }
  return out;
}

/** The Data Source of the first readable record of a file, if any. */
async function datasourceIn(file: string): Promise<string | null> {
  for await (const e of streamEntries(file)) if (e.rec) return e.rec.datasource;
  return null;
}

export function parseEntries(text: string): Entry[] {
  const out: Entry[] = [];
  for (const line of text.split('\n')) out.push(...parseLine(line));
  return out;
}

/** The entries of one line of a file: none (blank), one, or two (a torn fragment with a record glued to it). */
function parseLine(line: string): Entry[] {
  if (line.trim() === '') return [];
  const rec = parseRecord(line);
  if (rec) return [{ raw: line, rec }];
  const glued = line.lastIndexOf(RECORD_START);
  const tail = glued > 0 ? parseRecord(line.slice(glued)) : null;
  if (tail) return [{ raw: line.slice(0, glued), rec: null }, { raw: line.slice(glued), rec: tail }];
  return [{ raw: line, rec: null }];
}

/** The file opened for reading; null when it does not exist. */
async function openIfExists(file: string): Promise<FileHandle | null> {
  try {
    return await fsp.open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/**
 * The entries of a file one line at a time (replay and purge never hold a
 * whole file: a dead-letter file may reach dead_letter.max_bytes), past the
 * first `skip`. Nothing when the file does not exist.
 */
export async function* streamEntries(file: string, skip = 0): AsyncGenerator<Entry> {
  const fh = await openIfExists(file);
  if (!fh) return;
  const lines = readline.createInterface({ input: fh.createReadStream({ encoding: 'utf8' }), crlfDelay: Infinity });
  try {
    let i = 0;
    for await (const line of lines) for (const e of parseLine(line)) if (i++ >= skip) yield e;
  } finally {
    lines.close();
    await fh.close().catch(() => undefined);
  }
}

/**
 * The entries of the last `bytes` of a file, from its first whole line
 * there, to its last line ended by a newline (a record a crash tore before
 * its newline is not taken for a whole one). Nothing when the file does not
 * exist.
 */
export async function* tailEntries(file: string, bytes: number): AsyncGenerator<Entry> {
  const fh = await openIfExists(file);
  if (!fh) return;
  // From the byte before the window: the first line read is then a part
  // (dropped), or empty when the window begins a line.
  const size = (await fh.stat()).size;
  if (size === 0) return void (await fh.close());
  const start = Math.max(0, size - bytes - 1);
  const ended = (await fh.read(Buffer.alloc(1), 0, 1, size - 1)).buffer[0] === 10;
  const lines = readline.createInterface({ input: fh.createReadStream({ encoding: 'utf8', start, end: size - 1 }), crlfDelay: Infinity });
  try {
    let first = start > 0;
    let held: string | null = null;
    for await (const line of lines) {
      if (first) first = false;
      else {
        if (held !== null) yield* parseLine(held);
        held = line;
      }
    }
    if (held !== null && ended) yield* parseLine(held);
  } finally {
    lines.close();
    await fh.close().catch(() => undefined);
  }
}

/** The entries of a dead-letter file that no replay has finished: a live file's all, a taken file's past those done (replay-progress.ts). */
export async function* pendingEntries(file: string): AsyncGenerator<Entry> {
  yield* streamEntries(file, file.endsWith(REPLAYING_SUFFIX) ? await entriesDone(file) : 0);
}

const CRC_KEY = ',"crc32":"';

/** One record as a version 2 line (without its newline). */
export function encodeRecord(rec: DeadLetterRecord): string {
  const body = JSON.stringify({ ...rec, v: 2 });
  return `${body.slice(0, -1)}${CRC_KEY}${zlib.crc32(Buffer.from(body)).toString(16).padStart(8, '0')}"}`;
}

function parseRecord(line: string): DeadLetterRecord | null {
  const at = line.lastIndexOf(CRC_KEY);
  if (at !== -1 && line.endsWith('"}') && line.length - at === CRC_KEY.length + 10) {
    const want = line.slice(at + CRC_KEY.length, -2);
    if (zlib.crc32(Buffer.from(`${line.slice(0, at)}}`)).toString(16).padStart(8, '0') !== want) return null;
  }
  try {
    const v = JSON.parse(line) as Partial<DeadLetterRecord> | null;
    if (!v || typeof v !== 'object' || typeof v.datasource !== 'string' || typeof v.reason !== 'string') return null;
    if (typeof v.line !== 'string' && typeof v.line_base64 !== 'string') return null;
    return v as DeadLetterRecord;
  } catch {
    return null;
  }
}

export function matches(rec: DeadLetterRecord, f: Filter): boolean {
  return (f.datasource === undefined || rec.datasource === f.datasource) && (f.reason === undefined || rec.reason === f.reason);
}

/** Exactly the documented fields (README "Dead letters"), in that order (a record written by a newer version may carry more). */
export function specRecord(r: DeadLetterRecord): DeadLetterRecord {
  const out: DeadLetterRecord = {
    datasource: r.datasource,
    reason: r.reason,
    file: r.file ?? null,
    offset: r.offset ?? null,
    bytes: r.bytes,
    at: r.at,
    status: r.status ?? null,
  };
  if (r.line !== undefined) out.line = r.line;
  else out.line_base64 = r.line_base64 ?? '';
  return out;
}

export interface Listing {
  records: DeadLetterRecord[];
  /** Lines that are not records (torn writes), per file. */
  unreadable: Array<{ file: string; lines: number }>;
}

/** Every record matching the filter, live files and replay leftovers, oldest first. */
export async function listDeadLetters(dir: string, filter: Filter): Promise<Listing> {
  const records: DeadLetterRecord[] = [];
  const unreadable: Listing['unreadable'] = [];
  for (const f of await listDeadLetterFiles(dir, filter.datasource)) {
    const entries: Entry[] = [];
    for await (const e of pendingEntries(f.path)) entries.push(e);
    const bad = entries.filter((e) => e.rec === null).length;
    if (bad > 0) unreadable.push({ file: f.path, lines: bad });
    for (const e of entries) if (e.rec && matches(e.rec, filter)) records.push(e.rec);
  }
  records.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  return { records, unreadable };
}
