// Splits a decoded Events API body into rows without copying it: a RowSet is
// the body plus the byte range and verdict of each non-empty line, so partial
// inserts and dedup can store any range of rows as the exact bytes received.
//
// A line is a row when it is a JSON object in valid UTF-8; anything else (bad
// JSON, an array or number, invalid UTF-8) is quarantined, as the platform
// does. `validate: false` (benchmark sink only) skips the JSON check and takes
// every non-empty line as a row.
import { isUtf8 } from 'node:buffer';

const LF = 0x0a;
const CR = 0x0d;
const OPEN_BRACE = 0x7b;

export interface RowSet {
  body: Buffer;
  /** Byte range [starts[i], ends[i]) of line i (trailing \r excluded). */
  starts: number[];
  ends: number[];
  /** quarantined[i] is true when line i is not a JSON object. */
  quarantined: boolean[];
}

export function splitNdjson(body: Buffer, validate: boolean): RowSet {
  const set: RowSet = { body, starts: [], ends: [], quarantined: [] };
  let start = 0;
  while (start < body.length) {
    let nl = body.indexOf(LF, start);
    if (nl === -1) nl = body.length;
    let end = nl;
    if (end > start && body[end - 1] === CR) end -= 1;
    if (end > start) {
      set.starts.push(start);
      set.ends.push(end);
      set.quarantined.push(validate ? !isJsonObject(body, start, end) : false);
    }
    start = nl + 1;
  }
  return set;
}

/**
 * `format=json`: the body is one (possibly multi-line) JSON object, one row.
 * It is stored on one line: raw line breaks can only sit between JSON tokens,
 * so turning them into spaces keeps the same value and the NDJSON file valid.
 */
export function splitSingleJson(body: Buffer, validate: boolean): RowSet {
  let end = body.length;
  while (end > 0 && isSpace(body[end - 1]!)) end -= 1;
  if (end === 0) return { body, starts: [], ends: [], quarantined: [] };
  const one = Buffer.from(body.subarray(0, end));
  for (let i = one.indexOf(LF); i !== -1; i = one.indexOf(LF, i + 1)) one[i] = 0x20;
  for (let i = one.indexOf(CR); i !== -1; i = one.indexOf(CR, i + 1)) one[i] = 0x20;
  return { body: one, starts: [0], ends: [one.length], quarantined: [validate ? !isJsonObject(one, 0, one.length) : false] };
}

export function isJsonObject(buf: Buffer, start: number, end: number): boolean {
  let i = start;
  while (i < end && isSpace(buf[i]!)) i += 1;
  // Cheap reject before the UTF-8 check and JSON.parse.
  if (buf[i] !== OPEN_BRACE) return false;
  const line = buf.subarray(start, end);
  if (!isUtf8(line)) return false;
  try {
    JSON.parse(line.toString('utf8'));
    return true;
  } catch {
    return false;
  }
}

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x09 || b === LF || b === CR;
}

export interface RowCounts {
  rows: number;
  quarantined: number;
}

export function countRange(set: RowSet, from: number, to: number): RowCounts {
  let quarantined = 0;
  for (let i = from; i < to; i++) if (set.quarantined[i]) quarantined += 1;
  return { rows: to - from - quarantined, quarantined };
}

/** The bytes to append for lines [from, to): each line's exact bytes plus "\n", rows and quarantine apart. */
export function bytesOfRange(set: RowSet, from: number, to: number): { rows: Buffer; quarantined: Buffer } {
  const rows: Buffer[] = [];
  const quarantined: Buffer[] = [];
  const nl = Buffer.from('\n');
  for (let i = from; i < to; i++) {
    const target = set.quarantined[i] ? quarantined : rows;
    target.push(set.body.subarray(set.starts[i], set.ends[i]), nl);
  }
  return { rows: Buffer.concat(rows), quarantined: Buffer.concat(quarantined) };
}
