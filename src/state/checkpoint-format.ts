// The checkpoint file's on-disk format, read by the state store and by
// `spoolship status` (one reader, so the offline view cannot disagree).
//
//   version 2:  <JSON object, one line>\n#crc32 <8 hex digits>\n
//
// The CRC is Node's zlib.crc32 (IEEE CRC-32) over the JSON line's bytes.
// Version 1 (before this release) is the JSON object alone, with no CRC: it
// is accepted once, reported as `legacy` (the caller WARNs), and the next
// checkpoint rewrites it as version 2, so upgrading never re-ships a spool.
// Going back to an older release needs a fresh state_dir (README "Upgrading").
import zlib from 'node:zlib';

export const CHECKPOINT_VERSION = 2;
const CRC_PREFIX = '\n#crc32 ';

export type ParsedCheckpoint<T> = { ok: true; value: T; legacy: boolean } | { ok: false; why: string };

export function encodeCheckpoint(body: object): string {
  const json = JSON.stringify({ ...body, version: CHECKPOINT_VERSION });
  // zlib.crc32 takes the string as UTF-8 itself: no copy of a 6 MB JSON as a Buffer.
  return `${json}${CRC_PREFIX}${hex(zlib.crc32(json))}\n`;
}

export function decodeCheckpoint<T extends { version: number }>(text: string): ParsedCheckpoint<T> {
  const at = text.lastIndexOf(CRC_PREFIX);
  if (at === -1) {
    // No CRC: only the previous format (version 1) may lack one.
    let v: T;
    try {
      v = JSON.parse(text) as T;
    } catch {
      return { ok: false, why: 'not JSON and no CRC' };
    }
    return v?.version === 1 ? { ok: true, value: { ...v, version: CHECKPOINT_VERSION }, legacy: true } : { ok: false, why: 'no CRC' };
  }
  const json = text.slice(0, at);
  const want = text.slice(at + CRC_PREFIX.length).trim();
  if (hex(zlib.crc32(json)) !== want) return { ok: false, why: 'CRC mismatch (the file was changed or damaged)' };
  let v: T;
  try {
    v = JSON.parse(json) as T;
  } catch {
    return { ok: false, why: 'not JSON' };
  }
  if (v.version !== CHECKPOINT_VERSION) return { ok: false, why: `unsupported version ${String(v.version)} (written by a newer spoolship?)` };
  return { ok: true, value: v, legacy: false };
}

function hex(n: number): string {
  return n.toString(16).padStart(8, '0');
}
