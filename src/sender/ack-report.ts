// What an acknowledgement tells the hooks (observe/sender-events.ts): its
// odd answer, if any; whether its row counts add up to the lines sent (one
// that does not is acknowledged all the same, its counts ignored:
// docs/troubleshooting.md, `odd_answer_counts_mismatch`); and the lines and
// quarantined rows it counts.
import { judgeRowCounts } from './retry-policy.js';
import type { Final, Part, SenderHooks } from './types.js';

export function reportAck(hooks: SenderHooks, part: Part, v: Extract<Final, { kind: 'ack' }>): void {
  if (v.oddity) hooks.onOddAnswer?.(v.oddity, part.ds, null);
  const counts = judgeRowCounts(v.rows, part.lines);
  if (counts.mismatch) hooks.onOddAnswer?.('counts_mismatch', part.ds, counts.mismatch);
  else if (v.rows) hooks.onCountsAddUp?.(part.ds);
  hooks.onAck(part.ds, part.lines, part.rawLen, v.rows ? counts.quarantined : v.quarantinedRows);
}
