// The human form of a StatusReport: a header naming the source, one table
// per Data Source totals, one per file. Sizes in decimal units (as the
// config's KB/MB), exact numbers stay in --json.
import { renderTable, type Cell } from '../clusters/table.js';
import { printable } from '../util/printable.js';
import type { StatusReport } from './report.js';
import type { StatusRoute } from './collect.js';

export function humanBytes(n: number | null): string {
  if (n === null) return '-';
  if (n < 1000) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n;
  let i = -1;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return `${v >= 100 ? v.toFixed(0) : v.toFixed(1)} ${units[i]}`;
}

function count(n: number | null): string {
  return n === null ? '-' : String(n);
}

export function describeSource(r: StatusReport, via?: StatusRoute): string {
  const a = r.agent;
  if (r.source === 'agent') {
    const ready = a.ready ? 'ready' : `NOT ready (${printable(a.reasons.join(', '))})`;
    // Through the control socket (collect.ts): no admin endpoint, or one this config does not name.
    const socket = via === 'control' || a.admin_url === null;
    const where = socket ? `through its control socket${a.admin_url === null ? '' : ` (its admin endpoint: ${a.admin_url})`}` : `at ${a.admin_url}/status`;
    const threads = a.compression ? `; compression threads ${a.compression.threads} (thread pool ${a.compression.pool})` : '';
    return `source: running agent (pid ${a.pid}) ${where}; ${ready}; api ${printable(String(a.api))}${threads}`;
  }
  const running = a.running ? `agent running (pid ${a.pid}), but ${printable(String(a.admin_error))}` : `agent not running (${printable(a.admin_error ?? 'no admin endpoint')})`;
  return `source: state_dir ${printable(r.state_dir)}, read from disk; ${running}`;
}

export function renderStatus(r: StatusReport, opts: { color: boolean; via?: StatusRoute }): string {
  const out: string[] = [];
  out.push(`spoolship status at ${r.generated_at}`);
  out.push(describeSource(r, opts.via));
  const active = r.source === 'agent' ? `batches in progress: ${r.batches_active}` : `batches to resend at the next start: ${r.batches_active}`;
  const inFlight = r.in_flight === null ? '' : `; requests in flight: ${r.in_flight}`;
  out.push(`retry queue: ${r.queue.batches} batches, ${humanBytes(r.queue.bytes)}; ${active}${inFlight}`);
  if (r.spool?.missing) out.push(`warning: spool.dir ${printable(r.spool.dir)} does not exist (it is picked up when it appears)`);
  for (const dir of r.spool?.skipped_dirs ?? []) out.push(`warning: ${printable(dir)} is skipped: not a valid Data Source name`);
  out.push('');
  if (r.datasources.length === 0) {
    out.push('no Data Sources yet: no spool file has been tracked');
    return `${out.join('\n')}\n`;
  }
  const dsRows = r.datasources.map((d): Array<string | Cell> => [
    d.datasource,
    count(d.lines_read),
    count(d.lines_acked),
    { text: count(d.lines_dead_lettered), color: d.lines_dead_lettered ? 'yellow' : undefined },
    humanBytes(d.bytes_read),
    humanBytes(d.bytes_committed),
    humanBytes(d.bytes_queued),
    { text: humanBytes(d.bytes_behind), color: d.bytes_behind > 0 ? 'yellow' : undefined },
    String(d.queue.batches),
    { text: d.last_error ? printable(d.last_error) : '-', color: d.last_error ? 'yellow' : undefined },
    { text: d.parked ? printable(d.parked) : '-', color: d.parked ? 'red' : undefined },
  ]);
  // COMMITTED: acknowledged or dead-lettered; QUEUED: in the disk retry queue, not acknowledged (report.ts).
  const dsHeader = ['DATASOURCE', 'LINES READ', 'LINES ACKED', 'DEAD LETTERS', 'READ', 'COMMITTED', 'QUEUED', 'BEHIND', 'BATCHES QUEUED', 'LAST ERROR', 'PARKED'];
  out.push(renderTable(dsHeader, dsRows, { color: opts.color, right: new Set([1, 2, 3, 4, 5, 6, 7, 8]) }));
  const fileRows = r.datasources.flatMap((d) =>
    d.files.map((f): Array<string | Cell> => [
      d.datasource,
      printable(f.path),
      f.size === null ? { text: 'gone', color: 'dim' } : humanBytes(f.size),
      humanBytes(f.read),
      humanBytes(f.committed),
      humanBytes(f.queued),
      { text: humanBytes(f.behind), color: f.behind > 0 ? 'yellow' : undefined },
    ]),
  );
  if (fileRows.length > 0) {
    out.push(renderTable(['DATASOURCE', 'FILE', 'SIZE', 'READ', 'COMMITTED', 'QUEUED', 'BEHIND'], fileRows, { color: opts.color, right: new Set([2, 3, 4, 5, 6]) }));
  }
  return out.join('\n');
}
