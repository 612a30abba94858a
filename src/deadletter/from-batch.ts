// Lines of a batch the platform refused (or an operator moved), as
// dead-letter records: one per line of the raw part, each with the file and
// offset it was read from when the batch's ranges are known (re-read from
// the file: recovery/reform.ts locateLines), else null (stdin, a file gone).
// Used by the agent and by `spoolship send`.
import { locateLines } from '../recovery/reform.js';
import type { RangeRecord } from '../state/journal.js';
import type { DeadLetterInput, DeadLetterReason } from './store.js';

/** Pieces of one batch, each its raw lines and the batch line it starts at. */
export type LinePieces = ReadonlyArray<{ lineStart: number; raw: Buffer }>;

/**
 * The records of a batch's pieces, one per line, in the pieces' order.
 * `withFileKeys`: each located line's record names its spool file's state
 * key too (the agent's: a batch rejected again after a crash then keeps its
 * records, deadletter/recent.ts).
 */
export async function deadLetterInputs(
  ds: string,
  pieces: LinePieces,
  reason: DeadLetterReason,
  status: number | null,
  ranges: readonly RangeRecord[] | undefined,
  pathOf: (key: string) => string | undefined,
  withFileKeys = false,
): Promise<DeadLetterInput[]> {
  const out: DeadLetterInput[] = [];
  for (const { lineStart, raw } of pieces) {
    const lines: Buffer[] = [];
    for (let pos = 0; pos < raw.length; ) {
      const nl = raw.indexOf(10, pos);
      const end = nl === -1 ? raw.length : nl;
      lines.push(raw.subarray(pos, end));
      pos = end + 1;
    }
    const where = ranges ? await locateLines(ranges, pathOf, lineStart, lines.length) : [];
    for (const [i, line] of lines.entries()) {
      const at = where[i];
      out.push({ datasource: ds, reason, file: at?.file ?? null, offset: at?.offset ?? null, bytes: line.length, status, line, ...(withFileKeys && at ? { fileKey: at.key } : {}) });
    }
  }
  return out;
}
