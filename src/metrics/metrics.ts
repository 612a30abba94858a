// Every metric of docs/metrics.md, with its fixed name and labels, in one
// registry that is passed to each stage. Updated per batch or state change,
// never per line.
//
// Two promises to alerting (docs/metrics.md "Series from the start"):
// - Every labelled counter has its series at 0 for each known Data Source and
//   each of its reasons (knowDataSource) before it first counts: an
//   increase() over a series that appears at 1 is nothing, so the first
//   dead letter or lost line of an instance never fired an alert.
// - The registry outlives the agent: a SIGHUP reload builds a new agent on
//   the same one (bind), so no counter goes down without a restart.
import client from 'prom-client';
import { DEAD_LETTER_REASONS } from '../deadletter/files.js';
import type { AckOddity, RetryReason } from '../sender/retry-policy.js';
import { version } from '../util/version.js';

/** What the running agent answers at scrape time. */
export interface MetricsSources {
  /** Bytes of the spool not yet acknowledged, per Data Source: computed when /metrics is scraped. */
  /** Bytes behind per Data Source; null while the spool was not looked at yet (no series is set then). */
  behindBytes?: () => Map<string, number> | null;
  /** /readyz answers 200 now. */
  ready?: () => boolean;
}

/** Every reason spoolship_parked reports, each present (0) from the start. */
export const PARK_REASONS = ['token_rejected', 'workspace_not_found', 'bad_request', 'datasource_rejected', 'unexpected_response', 'disk_full', 'state_dir_unwritable'] as const;

/** spoolship_retries_total's reasons: every RetryReason of sender/retry-policy.ts (the Record makes a new one a compile error here). */
export const RETRY_REASONS = Object.keys({ '429': 1, '5xx': 1, timeout: 1, network: 1, goaway: 1, '413': 1, '400': 1 } satisfies Record<RetryReason, 1>) as RetryReason[];

/** spoolship_odd_answers_total's kinds: every AckOddity of sender/retry-policy.ts, and an ignored 429 wait. */
export const ODD_ANSWER_KINDS = Object.keys({ counts_mismatch: 1, empty_body: 1, accepted_under_wait: 1, ignored_wait: 1 } satisfies Record<AckOddity | 'ignored_wait', 1>) as Array<AckOddity | 'ignored_wait'>;

/** spoolship_lines_lost_total's reasons: queue_corrupt and file_gone (recovery/resend.ts), dead_letter_full (observe/state-events.ts). */
export const LOST_REASONS = ['queue_corrupt', 'dead_letter_full', 'file_gone'] as const;
/** The Events API's answers (docs/answers.md) and \`error\` (a network fault): spoolship_requests_total has their series from the start (docs/metrics.md). */
export const REQUEST_STATUSES = ['200', '202', '400', '401', '403', '404', '408', '413', '422', '429', '500', '502', '503', '504', 'error'] as const;

export function createMetrics(sources: MetricsSources = {}) {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  // Gauges named like counters: `promtool check metrics` rejects them, and
  // nodejs_active_{handles,requests,resources}{type} carry the same counts.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) registry.removeSingleMetric(name);
  const reg = [registry];
  let src = sources;
  /** Data Sources whose series exist (knowDataSource). */
  const known = new Set<string>();
  const m = {
    registry,
    linesRead: new client.Counter({ name: 'spoolship_lines_read_total', help: 'Lines read from spool files', labelNames: ['datasource'], registers: reg }),
    linesAcked: new client.Counter({ name: 'spoolship_lines_acked_total', help: 'Lines acknowledged by the API', labelNames: ['datasource'], registers: reg }),
    linesDeadLettered: new client.Counter({
      name: 'spoolship_lines_dead_lettered_total',
      help: 'Lines stored in the dead-letter store',
      labelNames: ['datasource', 'reason'],
      registers: reg,
    }),
    bytesRead: new client.Counter({ name: 'spoolship_bytes_read_total', help: 'Bytes read from spool files', labelNames: ['datasource'], registers: reg }),
    bytesSent: new client.Counter({ name: 'spoolship_bytes_sent_total', help: 'Request body bytes sent on the wire (compressed)', labelNames: ['datasource'], registers: reg }),
    requests: new client.Counter({
      name: 'spoolship_requests_total',
      help: 'Events API requests by HTTP status, or "error" for a network fault',
      labelNames: ['datasource', 'status'],
      registers: reg,
    }),
    requestDuration: new client.Histogram({
      name: 'spoolship_request_duration_seconds',
      help: 'Events API request duration',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: reg,
    }),
    batchBytes: new client.Histogram({
      name: 'spoolship_batch_bytes',
      help: 'Uncompressed batch size',
      buckets: [1e3, 1e4, 1e5, 5e5, 1e6, 2.5e6, 5e6, 1e7, 2.5e7, 5e7, 1e8],
      registers: reg,
    }),
    retries: new client.Counter({ name: 'spoolship_retries_total', help: 'Retries by reason', labelNames: ['reason'], registers: reg }),
    queueBytes: new client.Gauge({ name: 'spoolship_queue_bytes', help: 'Bytes of the disk retry queue on disk (its segment files)', registers: reg }),
    queueBatches: new client.Gauge({ name: 'spoolship_queue_batches', help: 'Batches in the disk retry queue', registers: reg }),
    behindBytes: new client.Gauge({
      name: 'spoolship_behind_bytes',
      help: 'Bytes of the spool not yet acknowledged: unread, read, in flight or in the disk retry queue',
      labelNames: ['datasource'],
      registers: reg,
      // At scrape time: walking 10,000 files on every tick cost CPU and garbage.
      collect() {
        // null until the spool was first looked at: a 0 then would say
        // "nothing behind" of a spool whose files are not stat'd yet.
        const now = src.behindBytes?.();
        if (now === null || now === undefined) return;
        for (const ds of now.keys()) knowDataSource(ds);
        for (const ds of known) this.set({ datasource: ds }, now.get(ds) ?? 0);
      },
    }),
    ready: new client.Gauge({
      name: 'spoolship_ready',
      help: '1 while /readyz answers 200, else 0',
      registers: reg,
      collect() {
        this.set(src.ready?.() === true ? 1 : 0);
      },
    }),
    buildInfo: new client.Gauge({ name: 'spoolship_build_info', help: 'Always 1: the version of spoolship and of Node.js', labelNames: ['version', 'node'], registers: reg }),
    ackLatency: new client.Histogram({
      name: 'spoolship_ack_latency_seconds',
      help: 'Time from reading a line to its acknowledgement',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
      registers: reg,
    }),
    parked: new client.Gauge({ name: 'spoolship_parked', help: '1 while parked for this reason', labelNames: ['reason'], registers: reg }),
    truncations: new client.Counter({ name: 'spoolship_truncations_total', help: 'Files truncated under the reader (copytruncate)', registers: reg }),
    queueCorrupt: new client.Counter({ name: 'spoolship_queue_corrupt_records_total', help: 'Torn or corrupt retry-queue records skipped', registers: reg }),
    limiterFallback: new client.Gauge({ name: 'spoolship_limiter_fallback', help: '1 while the shared Redis budget is unreachable', registers: reg }),
    queuePastDedupWindow: new client.Counter({
      name: 'spoolship_queue_past_dedup_window_total',
      help: 'Queued batches sent more than 5 hours after they were queued (the platform no longer deduplicates their retries)',
      registers: reg,
    }),
    oddAnswers: new client.Counter({
      name: 'spoolship_odd_answers_total',
      help: 'Answers taken as they are although odd: counts_mismatch (row counts that do not add up to the lines sent), empty_body, accepted_under_wait (a 202 while waiting), ignored_wait (a 429 wait out of bounds)',
      labelNames: ['kind'],
      registers: reg,
    }),
    deadLetterDropped: new client.Counter({ name: 'spoolship_dead_letter_dropped_total', help: 'Dead letters dropped because the store was full', registers: reg }),
    rowsQuarantined: new client.Counter({
      name: 'spoolship_rows_quarantined_total',
      help: 'Rows the platform stored in <datasource>_quarantine (quarantined_rows of acknowledged answers)',
      labelNames: ['datasource'],
      registers: reg,
    }),
    linesLost: new client.Counter({
      name: 'spoolship_lines_lost_total',
      help: 'Lines that could not be delivered nor kept: queue_corrupt (a damaged queue record whose lines changed in the spool), dead_letter_full, file_gone (a batch unanswered at a crash whose bytes were gone at the restart)',
      labelNames: ['datasource', 'reason'],
      registers: reg,
    }),
    inFlightLimit: new client.Gauge({
      name: 'spoolship_in_flight_limit',
      help: 'Requests allowed in flight now: limits.max_in_flight, or where max_in_flight: auto stands',
      registers: reg,
    }),
    learnedMaxBodyBytes: new client.Gauge({
      name: 'spoolship_learned_max_body_bytes',
      help: 'Largest uncompressed request body sent: batch.max_bytes, or lower after a 413 (grows back 10 % per 5 minutes)',
      registers: reg,
    }),
    inFlightBytes: new client.Gauge({
      name: 'spoolship_in_flight_bytes',
      help: 'Compressed bytes of the requests in flight now (each counted from its turn under limits.max_in_flight_bytes to its answer)',
      registers: reg,
    }),
    compressionThreads: new client.Gauge({
      name: 'spoolship_compression_threads',
      help: 'Compressions at once (parts of zstd batches): compression.threads, or the CPUs this process may use when auto',
      registers: reg,
    }),
    spilledBodyBytes: new client.Gauge({
      name: 'spoolship_spilled_body_bytes',
      help: 'Compressed bodies waiting for their answers in (unlinked) files of state_dir/spill instead of memory: slow answers keep many in flight',
      registers: reg,
    }),
  };

  /** The zero series of a Data Source, once: called when it is first seen, before anything counts for it. */
  function knowDataSource(ds: string): void {
    if (known.has(ds)) return;
    known.add(ds);
    for (const c of [m.linesRead, m.linesAcked, m.bytesRead, m.bytesSent, m.rowsQuarantined]) c.inc({ datasource: ds }, 0);
    for (const reason of DEAD_LETTER_REASONS) m.linesDeadLettered.inc({ datasource: ds, reason }, 0);
    for (const reason of LOST_REASONS) m.linesLost.inc({ datasource: ds, reason }, 0);
    for (const status of REQUEST_STATUSES) m.requests.inc({ datasource: ds, status }, 0);
  }

  /** The gauges a (re)started agent sets again as it goes: their value at its start. */
  function resetGauges(): void {
    for (const reason of PARK_REASONS) m.parked.set({ reason }, 0);
    m.limiterFallback.set(0);
    m.queueBytes.set(0);
    m.spilledBodyBytes.set(0);
    m.inFlightBytes.set(0);
    m.queueBatches.set(0);
  }

  /** A (re)started agent takes over the registry: its scrape-time answers, its gauges from their start values; counters go on. */
  function bind(next: MetricsSources): void {
    src = next;
    resetGauges();
  }

  for (const reason of RETRY_REASONS) m.retries.inc({ reason }, 0);
  for (const kind of ODD_ANSWER_KINDS) m.oddAnswers.inc({ kind }, 0);
  m.buildInfo.set({ version: version(), node: process.version }, 1);
  resetGauges();
  return Object.assign(m, { knowDataSource, bind });
}

export type Metrics = ReturnType<typeof createMetrics>;
