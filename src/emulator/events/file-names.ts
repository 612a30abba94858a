// The file each Data Source's rows and quarantine go to under the data dir
// (docs/emulator.md "Stored rows"). The plain layout is `<name>.ndjson` for
// rows and `<name>_quarantine.ndjson` for the lines that were not JSON
// objects. Two cases cannot use it:
//
// - A Data Source whose own name ends in `_quarantine` (`x_quarantine`): its
//   rows would land in the quarantine file of `x`. Its rows go to
//   `<name>.rows.ndjson` instead; its quarantine keeps the plain form.
// - A name too long for a file name (NAME_MAX is 255 bytes, and names may be
//   255 characters): `<first 200 chars>.<16 hex of SHA-256(name)>.<kind>.ndjson`.
//
// The mapping is injective: names contain only [A-Za-z0-9_], so a file name
// with a dot before `.ndjson` can only come from the second or third form, and
// those carry their kind (`rows`, `quarantine`) and a name or hash apart.
import { createHash } from 'node:crypto';

export const QUARANTINE_SUFFIX = '_quarantine';
/** Longest file name most file systems accept (NAME_MAX, bytes; names are ASCII). */
const MAX_FILE_NAME_BYTES = 255;
const LONG_NAME_PREFIX_CHARS = 200;

export type RowKind = 'rows' | 'quarantine';

export function dataSourceFileName(name: string, kind: RowKind): string {
  const plain =
    kind === 'quarantine' ? `${name}${QUARANTINE_SUFFIX}.ndjson` : name.endsWith(QUARANTINE_SUFFIX) ? `${name}.rows.ndjson` : `${name}.ndjson`;
  if (plain.length <= MAX_FILE_NAME_BYTES) return plain;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 16);
  return `${name.slice(0, LONG_NAME_PREFIX_CHARS)}.${hash}.${kind}.ndjson`;
}
