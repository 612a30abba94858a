// A Data Source name in a file name. Names may have 255 characters and a
// file name holds at most 255 bytes (NAME_MAX), so where a name and a suffix
// would not fit, the name is cut to its first LONG_NAME_PREFIX_CHARS with 16
// hex of its SHA-256 after a dot. Names contain only [A-Za-z0-9_]: a dot
// tells the cut form from a whole name. Used by the emulator's row files and
// the dead-letter store alike.
import { createHash } from 'node:crypto';

export const LONG_NAME_PREFIX_CHARS = 200;

export function cutName(name: string): string {
  return `${name.slice(0, LONG_NAME_PREFIX_CHARS)}.${createHash('sha256').update(name).digest('hex').slice(0, 16)}`;
}
