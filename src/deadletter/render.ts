// Human output of `dead-letter list` and `dead-letter replay`.
import { renderTable, type Cell } from '../clusters/table.js';
import { printable } from '../util/printable.js';
import type { ReplaySummary } from './replay.js';
import type { StopReason } from './replay-sender.js';
import type { DeadLetterRecord } from './store.js';

const PREVIEW_CHARS = 60;

/** One line of text, control characters escaped, cut at PREVIEW_CHARS. */
export function preview(rec: DeadLetterRecord): string {
  const text = rec.line !== undefined ? rec.line : `base64:${rec.line_base64 ?? ''}`;
  const flat = printable(text);
  return flat.length > PREVIEW_CHARS ? `${flat.slice(0, PREVIEW_CHARS - 1)}…` : flat;
}

export function renderList(records: readonly DeadLetterRecord[], opts: { color: boolean }): string {
  const rows = records.map((r): Array<string | Cell> => [
    r.at,
    r.datasource,
    { text: r.reason, color: r.reason === 'rejected' ? 'yellow' : undefined },
    r.status === null ? '-' : String(r.status),
    r.file === null ? '-' : `${printable(r.file)}:${r.offset ?? '?'}`,
    String(r.bytes),
    { text: preview(r), color: r.line === undefined ? 'dim' : undefined },
  ]);
  const table = renderTable(['AT', 'DATASOURCE', 'REASON', 'STATUS', 'FILE:OFFSET', 'BYTES', 'LINE'], rows, { color: opts.color, right: new Set([3, 5]) });
  return `${table}${records.length} dead letter${records.length === 1 ? '' : 's'}\n`;
}

export const STOP_MESSAGES: Record<StopReason, string> = {
  token_rejected: 'the API rejected the token (401/403): nothing more was sent; check api.token / api.token_file (it needs DATASOURCE:APPEND or CREATE scope)',
  workspace_not_found: "the API answered 404: the token's Workspace is not on this host; set api.base_url to the host of the token's region",
  bad_request: 'the API rejects every request for this Data Source (400 for both halves of a batch): check the Data Source name',
  interrupted: 'interrupted: nothing more was sent',
};

export function renderSummary(s: ReplaySummary): string {
  const lines = [
    `selected: ${s.selected}`,
    `acknowledged (removed): ${s.acknowledged}`,
    `rejected again (kept, with the new answer): ${s.rejected}`,
    `not sent (kept): ${s.not_sent}`,
  ];
  if (s.skipped_truncated > 0) lines.push(`not replayable, stored truncated (kept): ${s.skipped_truncated}`);
  lines.push(`remaining in the dead-letter store for this selection: ${s.remaining}`);
  if (s.stopped) lines.push(`stopped: ${s.stopped}`);
  return `${lines.join('\n')}\n`;
}
