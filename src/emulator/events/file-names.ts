// The file each Data Source's rows and quarantine go to under the data dir
// (docs/emulator.md "Stored rows"). The plain layout is `<name>.ndjson` for
// rows and `<name>_quarantine.ndjson` for the lines that were not JSON
// objects. Two cases cannot use it:
//
// - A Data Source whose own name ends in `_quarantine` (`x_quarantine`): its
//   rows would land in the quarantine file of `x`. Its rows go to
//   `<name>.rows.ndjson` instead; its quarantine keeps the plain form.
// - A name too long for a file name (NAME_MAX is 255 bytes, and names may be
//   255 characters): `<first 200 chars>.<16 hex of SHA-256(name)>.<kind>.ndjson`
//   (util/long-name.ts).
//
// The mapping is injective: names contain only [A-Za-z0-9_], so a file name
// with a dot before `.ndjson` can only come from the second or third form, and
// those carry their kind (`rows`, `quarantine`) and a name or hash apart.
import { cutName } from '../../util/long-name.js';

export const QUARANTINE_SUFFIX = '_quarantine';
/** Longest file name most file systems accept (NAME_MAX, bytes; names are ASCII). */
const MAX_FILE_NAME_BYTES = 255;

export type RowKind = 'rows' | 'quarantine';

export function dataSourceFileName(name: string, kind: RowKind): string {
  const plain =
    kind === 'quarantine' ? `${name}${QUARANTINE_SUFFIX}.ndjson` : name.endsWith(QUARANTINE_SUFFIX) ? `${name}.rows.ndjson` : `${name}.ndjson`;
  if (plain.length <= MAX_FILE_NAME_BYTES) return plain;
  return `${cutName(name)}.${kind}.ndjson`;
}
