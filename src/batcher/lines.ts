// The line rules, in one place: the batcher cuts batches with them and crash
// re-forming (recovery/reform.ts) rebuilds a batch's bytes from its file ranges
// with them, so a re-formed batch is byte-identical to the one first sent
// (test/state/reform.test.ts checks this for random line mixes).
//
// - A line ends at "\n". A "\r" right before it is not content ("\r\n" is
//   sent as "\n"); a "\r" anywhere else is.
// - A line with no content (only "\n" or "\r\n") is skipped: nothing is sent,
//   its bytes are still claimed by the batch.
// - A file's last line without "\n" is sent (with "\n") once the file is
//   finished.
//
// Offsets only (no object per line): this runs on every byte read.
import { isUtf8 } from 'node:buffer';

export const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/** The offset of the "\n" ending the line that starts at `pos`, or `end` when there is none before it. */
export function lineEnd(buf: Buffer, pos: number, end: number): number {
  const nl = buf.indexOf(NEWLINE, pos);
  return nl === -1 || nl >= end ? end : nl;
}

/** Where the content of the line [pos, nl) ends: before a "\r" that precedes the newline. */
export function contentEnd(buf: Buffer, pos: number, nl: number): number {
  return nl > pos && buf[nl - 1] === CARRIAGE_RETURN ? nl - 1 : nl;
}

/**
 * The ordinary lines at the start of buf[from, to) (which ends in "\n"): not
 * empty, no "\r" before the newline, content at most `maxLen` bytes. `end`
 * is where the first line of another kind starts (`to` when there is none).
 * One native search and two byte checks per line: the short loop nearly every
 * chunk takes.
 */
export function plainRun(buf: Buffer, from: number, to: number, maxLen: number): { end: number; lines: number } {
  // Self-contained (literals, not NEWLINE and CARRIAGE_RETURN): the reader
  // thread runs this very function from its source (spool/scan-reader.ts).
  let lines = 0;
  let start = from;
  while (start < to) {
    const p = buf.indexOf(0x0a, start);
    if (p === -1 || p >= to || p === start || buf[p - 1] === 0x0d || p - start > maxLen) break;
    lines++;
    start = p + 1;
  }
  return { end: start, lines };
}

/** What a reader's look at a chunk buf[from, to) found (spool/scan-reader.ts lookAtChunk). */
export interface ChunkLook {
  /** The last "\n" in buf[from, to), or -1. */
  lastNewline: number;
  /** plainRun(buf, from, lastNewline + 1, maxLen): where the ordinary lines from `from` end, and how many. */
  runEnd: number;
  lines: number;
  /** CRC-32 of buf[from, runEnd). */
  crc: number;
}

/** `validate: json`: the line is one JSON object. */
export function isJsonObject(buf: Buffer, start: number, end: number): boolean {
  const slice = buf.subarray(start, end);
  if (!isUtf8(slice)) return false;
  try {
    const v: unknown = JSON.parse(slice.toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}
