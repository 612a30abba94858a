// The agent's status report: the body of /status and of
// `spoolship status --json` (the StatusReport of src/report/report.ts), built
// from a snapshot of the running parts.
import type { Readiness } from '../admin/server.js';
import type { StateStore } from '../state/store.js';
import { fileBytes, STATUS_VERSION, type ByteRange } from './report.js';

/** What the report reads from the running agent. */
export interface StatusView {
  tailers: Iterable<{ key: string; ds: string; path: string; lastSize: number; readOffset: number }>;
  /** A file's committed offset, if the state knows the file. */
  store: Pick<StateStore, 'committedOf'>;
  /** Each file's ranges (by key) in the disk retry queue. */
  queuedRanges: ReadonlyMap<string, ByteRange[]>;
  /** prom-client counters labelled by `datasource`. */
  linesRead: object;
  linesAcked: object;
  rowsQuarantined: object;
  /** spoolship_lines_dead_lettered_total (labelled by datasource and reason). */
  linesDeadLettered: object;
  spool: { dir: string; missing: boolean; skippedDirs: string[] };
  parkedDataSources: ReadonlyMap<string, string>;
  budgetPark: string | null;
  lastError: ReadonlyMap<string, string>;
  readiness: Readiness;
  now: number;
  stateDir: string;
  adminUrl: string | null;
  apiUrl: string;
  queue: { batches: number; bytes: number };
  /** The disk queue's batches and bytes per Data Source. */
  queueByDataSource: ReadonlyMap<string, { batches: number; bytes: number }>;
  batchesActive: number;
  inFlight: number;
  compression: { threads: number; pool: number };
}

export function statusReport(v: StatusView): unknown {
  const files = [...v.tailers].map((t) => {
    const bytes = fileBytes(t.lastSize, t.readOffset, v.store.committedOf(t.key) ?? t.readOffset, v.queuedRanges.get(t.key) ?? []);
    return { ds: t.ds, path: t.path, size: t.lastSize, read: t.readOffset, ...bytes };
  });
  const linesRead = metricByDataSource(v.linesRead);
  const linesAcked = metricByDataSource(v.linesAcked);
  const quarantined = metricByDataSource(v.rowsQuarantined);
  const deadLettered = metricByDataSource(v.linesDeadLettered);
  const parkedDs = v.parkedDataSources;
  const names = new Set([...files.map((f) => f.ds), ...linesRead.keys(), ...linesAcked.keys(), ...parkedDs.keys(), ...v.lastError.keys(), ...v.queueByDataSource.keys()]);
  const datasources = [...names].sort().map((ds) => {
    const own = files.filter((f) => f.ds === ds).map(({ ds: _ds, ...f }) => f);
    return {
      datasource: ds,
      lines_read: linesRead.get(ds) ?? 0,
      lines_acked: linesAcked.get(ds) ?? 0,
      rows_quarantined: quarantined.get(ds) ?? 0,
      lines_dead_lettered: deadLettered.get(ds) ?? 0,
      bytes_read: own.reduce((n, f) => n + f.read, 0),
      bytes_committed: own.reduce((n, f) => n + f.committed, 0),
      bytes_queued: own.reduce((n, f) => n + f.queued, 0),
      bytes_behind: own.reduce((n, f) => n + f.behind, 0),
      last_error: v.lastError.get(ds) ?? null,
      parked: parkedDs.get(ds) ?? v.budgetPark,
      queue: v.queueByDataSource.get(ds) ?? { batches: 0, bytes: 0 },
      files: own,
    };
  });
  return {
    version: STATUS_VERSION,
    source: 'agent',
    generated_at: new Date(v.now).toISOString(),
    state_dir: v.stateDir,
    agent: { running: true, pid: process.pid, admin_url: v.adminUrl, admin_error: null, api: redactUrl(v.apiUrl), ready: v.readiness.ready, reasons: v.readiness.reasons, compression: v.compression },
    queue: v.queue,
    batches_active: v.batchesActive,
    in_flight: v.inFlight,
    spool: { dir: v.spool.dir, missing: v.spool.missing, skipped_dirs: v.spool.skippedDirs },
    datasources,
  };
}

/**
 * A prom-client counter's values summed per `datasource` label. prom-client
 * 15's `get()` is async while /status is answered synchronously, so this
 * reads the counter's per-label-set values directly (prom-client is pinned;
 * test/ops/status.test.ts checks the numbers against the lines sent).
 */
function metricByDataSource(metric: object): Map<string, number> {
  const sets = (metric as { hashMap?: Record<string, { labels?: Record<string, string>; value?: number }> }).hashMap ?? {};
  const out = new Map<string, number>();
  for (const { labels, value } of Object.values(sets)) {
    const ds = labels?.datasource ?? '';
    out.set(ds, (out.get(ds) ?? 0) + (value ?? 0));
  }
  return out;
}

/** A URL for logs and reports: a password in it becomes `***`. */
export function redactUrl(u: string): string {
  try {
    const url = new URL(u);
    if (url.password) url.password = '***';
    return url.toString().replace(/\/$/, '');
  } catch {
    return u;
  }
}
