// The shape of `spoolship status --json`, which is also the body of the
// agent's `/status` (README "Metrics and health"). Both sources fill the same shape; what
// a source cannot know is null, never a guess:
//
// | field                         | from the agent (`source: "agent"`)           | from the state dir (`source: "state_dir"`)       |
// |-------------------------------|----------------------------------------------|--------------------------------------------------|
// | datasources[].lines_read      | spoolship_lines_read_total since start       | null (counters live in the process)              |
// | datasources[].lines_acked     | spoolship_lines_acked_total since start      | null                                             |
// | datasources[].rows_quarantined| spoolship_rows_quarantined_total since start | null                                             |
// | datasources[].lines_dead_lettered | spoolship_lines_dead_lettered_total since start (every reason) | null                     |
// | files[].size                  | size at the tailer's last look               | stat() now; null when the path is gone/replaced  |
// | files[].read                  | the tailer's read offset                     | end of the recorded batches (where a start resumes) |
// | files[].committed             | bytes acknowledged or dead-lettered          | same, from checkpoint + journal                  |
// | files[].queued                | bytes in the disk retry queue (not acked)    | same, from checkpoint + journal                  |
// | queue.batches, queue.bytes    | the disk retry queue (<state_dir>/queue)     | same, read from its segments and acks.log        |
// | batches_active                | batches between close and done (in memory)   | batches recorded in the journal and not done: re-formed and resent at the next start |
// | last_error, parked, in_flight | live                                         | null                                             |
//
// The state's committed offset (docs/guarantees.md rule 1: never read again)
// covers bytes acknowledged, dead-lettered or durably queued; the report
// splits it: `committed` is acknowledged or dead-lettered, `queued` waits in
// the disk retry queue (not acknowledged: version 1 counted it as committed,
// so `read 201 / acked 200` showed nothing unacknowledged). `behind` is
// what is not committed, queued bytes included, as spoolship_behind_bytes
// counts it (version 2 left queued bytes out: a parked agent's backlog
// showed "behind 0"): size = committed + behind, queued <= behind.
//
// `version` changes only when a field changes meaning or goes away.

export const STATUS_VERSION = 3;

export type StatusSource = 'agent' | 'state_dir';

export interface FileStatus {
  path: string;
  /** Bytes on disk; null when the file is no longer at `path` (state-dir source). */
  size: number | null;
  read: number;
  /** Bytes acknowledged or dead-lettered. */
  committed: number;
  /** Bytes read and waiting in the disk retry queue: kept, not acknowledged. */
  queued: number;
  /** Bytes on disk not committed, queued ones included, as spoolship_behind_bytes counts them (of those read, when the size is unknown). */
  behind: number;
}

export interface DataSourceStatus {
  datasource: string;
  lines_read: number | null;
  lines_acked: number | null;
  /** Rows the platform stored in <datasource>_quarantine (quarantined_rows of acknowledged answers). */
  rows_quarantined: number | null;
  /** Lines moved to the dead-letter store, every reason (with lines_acked, what became of lines_read). */
  lines_dead_lettered: number | null;
  bytes_read: number;
  bytes_committed: number;
  bytes_queued: number;
  bytes_behind: number;
  /** Last failed answer for this Data Source, e.g. "HTTP 503", or a network failure's cause ("ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:1"). */
  last_error: string | null;
  /** bad_request (this Data Source), or the budget's token_rejected / workspace_not_found. */
  parked: string | null;
  /** This Data Source's batches in the disk retry queue, and their record bytes on disk (a share of the report's `queue`). */
  queue: QueueDepth;
  files: FileStatus[];
}

export interface QueueDepth {
  batches: number;
  bytes: number;
}

export interface AgentInfo {
  running: boolean;
  /** The process holding the state_dir lock (the agent's own pid from /status). */
  pid: number | null;
  admin_url: string | null;
  /** Why the admin endpoint was not used (state-dir source only), e.g. "admin.listen is disabled". */
  admin_error: string | null;
  api: string | null;
  ready: boolean | null;
  reasons: string[];
  /** Compressions at once (compression.threads) and libuv's pool; absent when read from disk. */
  compression?: { threads: number; pool: number };
}

export interface StatusReport {
  version: number;
  source: StatusSource;
  generated_at: string;
  state_dir: string;
  agent: AgentInfo;
  /** The disk retry queue: batches and record bytes on disk (compressed bodies). */
  queue: QueueDepth;
  batches_active: number;
  /** Requests awaiting an answer. */
  in_flight: number | null;
  /** spool.dir, whether it is missing, and directories under it skipped for an invalid Data Source name. */
  spool: { dir: string; missing: boolean; skipped_dirs: string[] };
  datasources: DataSourceStatus[];
}

/** A /status body is used only when it has this shape (an older agent, or another service, is not). */
export function isStatusReport(v: unknown): v is StatusReport {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as Partial<StatusReport>;
  return r.version === STATUS_VERSION && typeof r.state_dir === 'string' && typeof r.agent === 'object' && Array.isArray(r.datasources);
}

/** Per-Data-Source totals of its files (both sources use this). */
export function totals(files: readonly FileStatus[]): Pick<DataSourceStatus, 'bytes_read' | 'bytes_committed' | 'bytes_queued' | 'bytes_behind'> {
  let read = 0;
  let committed = 0;
  let queued = 0;
  let behind = 0;
  for (const f of files) {
    read += f.read;
    committed += f.committed;
    queued += f.queued;
    behind += f.behind;
  }
  return { bytes_read: read, bytes_committed: committed, bytes_queued: queued, bytes_behind: behind };
}

export interface ByteRange {
  start: number;
  end: number;
}

/** The byte ranges of each file (by key) held in the disk retry queue. */
export function queuedRangesByFile(queued: Iterable<{ ranges: ReadonlyArray<{ file: string; start: number; end: number }> }>): Map<string, ByteRange[]> {
  const out = new Map<string, ByteRange[]>();
  for (const q of queued) {
    for (const r of q.ranges) {
      let list = out.get(r.file);
      if (!list) out.set(r.file, (list = []));
      list.push({ start: r.start, end: r.end });
    }
  }
  return out;
}

/**
 * One file's bytes by state. `committedOffset`: the state's offset below
 * which nothing is read again (acknowledged, dead-lettered or queued);
 * `queued`: the file's ranges in the disk queue, below that offset or past
 * it (a later batch queued while an earlier one is still in flight).
 */
export function fileBytes(size: number | null, read: number, committedOffset: number, queued: readonly ByteRange[]): Pick<FileStatus, 'committed' | 'queued' | 'behind'> {
  let queuedBytes = 0;
  let queuedBelow = 0;
  for (const r of queued) {
    queuedBytes += r.end - r.start;
    queuedBelow += Math.max(0, Math.min(r.end, committedOffset) - r.start);
  }
  const committed = committedOffset - queuedBelow;
  // Queued bytes are kept, not acknowledged: behind, as the metric counts them (an outage shows as growth).
  const behind = Math.max(0, (size ?? read) - committed);
  return { committed, queued: queuedBytes, behind };
}
