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

/** The writer's chunks hold about this many characters each. */
const CHUNK_CHARS = 1 << 20;

/**
 * The checkpoint as chunks of text, written one after the other: with
 * 20,000 files it is 6 MB of JSON, and a single string (plus its copy as one
 * Buffer, plus every file's object alive until the end) cost ~30 MB of peak
 * memory at each checkpoint (bench/README.md finding 29). Each file is
 * stringified as it comes, so its object dies young, and the CRC is taken
 * chunk by chunk (zlib.crc32 continues from the previous value).
 *
 * The text is exactly `JSON.stringify({ version, ...head, files, ...tail() })`
 * followed by the CRC line; `tail` is called after the last file (it may
 * depend on what the files said). Runs synchronously: the state it reads
 * cannot change while it runs.
 */
export function encodeCheckpointChunks(head: Record<string, unknown>, files: Iterable<object>, tail: () => Record<string, unknown>): string[] {
  const chunks: string[] = [];
  let crc = 0;
  let cur = `${JSON.stringify({ version: CHECKPOINT_VERSION, ...head }).slice(0, -1)},"files":[`;
  let first = true;
  for (const f of files) {
    cur += first ? JSON.stringify(f) : `,${JSON.stringify(f)}`;
    first = false;
    if (cur.length >= CHUNK_CHARS) {
      // zlib.crc32 takes the string as UTF-8 itself: no Buffer copy here.
      crc = zlib.crc32(cur, crc);
      chunks.push(cur);
      cur = '';
    }
  }
  const rest = JSON.stringify(tail());
  cur += rest === '{}' ? ']}' : `],${rest.slice(1)}`;
  crc = zlib.crc32(cur, crc);
  chunks.push(cur, `${CRC_PREFIX}${hex(crc)}\n`);
  return chunks;
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
