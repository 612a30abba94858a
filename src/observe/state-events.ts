// What the state side tells operators: the parked gauge for a full or
// unwritable state_dir (the acker's faults, and a start waiting one out), a line the full dead-letter
// store could not keep, a queue record skipped as torn or corrupt, a
// changed token file, a loose state_dir made 0700, and the state lock's
// fallback, wait and loss.
import type { DeadLetterInput } from '../deadletter/store.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import type { StateFault } from '../state/acker.js';
import type { LockEvent } from '../state/lock.js';
import type { AcksDamagedHandler } from '../queue/format.js';
import type { QueueCorruptHandler } from '../queue/segments.js';

export function stateFaultGauge(metrics: Metrics): (faults: ReadonlySet<Exclude<StateFault, null>>) => void {
  return (faults) => {
    for (const reason of ['disk_full', 'state_dir_unwritable'] as const) metrics.parked.set({ reason }, faults.has(reason) ? 1 : 0);
  };
}

/**
 * A start waiting out a full or unwritable state_dir (agent/state-wait.ts):
 * the gauge, one ERROR state_fault per fault with what to do and the admin
 * address whose /readyz says it, and state_fault_cleared when a try works.
 */
export function startStateFault(metrics: Metrics, log: Logger, stateDir: string, admin: string | null): (fault: StateFault, err?: unknown) => void {
  const gauge = stateFaultGauge(metrics);
  return (fault, err) => {
    gauge(new Set(fault ? [fault] : []));
    if (!fault) {
      log.info({ event: 'state_fault_cleared' }, 'state_dir writable again: starting');
      return;
    }
    const e = err as NodeJS.ErrnoException;
    const fix =
      fault === 'disk_full'
        ? "state_dir's file system is full while the agent starts: waiting for space; free space there (or give state_dir a larger volume) and it starts by itself"
        : 'state_dir cannot be written while the agent starts (read-only, or not writable by this user): waiting; make it writable and it starts by itself';
    log.error({ event: 'state_fault', fault, state_dir: stateDir, code: e.code, syscall: e.syscall, path: e.path, admin }, fix);
  };
}

/**
 * dead_letter.max_bytes reached: the line is lost and counted; one ERROR
 * (`dead_letter_full`) when a stretch of drops begins, never one per line
 * (docs/metrics.md "Logs"): the counters say how many followed.
 */
export function deadLetterDropped(metrics: Metrics, log: Logger, maxBytes: number): (input: DeadLetterInput, firstOfStretch: boolean) => void {
  return (input, firstOfStretch) => {
    metrics.deadLetterDropped.inc();
    metrics.linesLost.inc({ datasource: input.datasource, reason: 'dead_letter_full' });
    if (!firstOfStretch) return;
    log.error(
      { event: 'dead_letter_full', datasource: input.datasource, reason: input.reason, max_bytes: maxBytes },
      'dead-letter store full: new dead letters are dropped until it has room (counted in spoolship_dead_letter_dropped_total and spoolship_lines_lost_total{reason="dead_letter_full"}); raise dead_letter.max_bytes, or replay or purge it',
    );
  };
}

/**
 * A corrupt queue record: counted, logged (its segment file noted in
 * `damagedFiles`, which the ERROR of its lost or re-read batch names), and
 * `readAgain` looks for its lines in the spool. A torn tail (a crash during the write) is cut quietly
 * (docs/delivery.md "Integrity of state"): INFO, not counted; its lines are looked for the same way.
 */
export function queueRecordSkipped(metrics: Metrics, log: Logger, readAgain: () => void, damagedFiles: Set<string>): QueueCorruptHandler {
  return (what, torn = false, file) => {
    if (file && !torn) damagedFiles.add(file);
    if (torn) log.info({ event: 'queue_torn_tail', what, file }, 'retry queue: cut a record torn by a crash; its lines are read again from the spool when unchanged');
    else {
      metrics.queueCorrupt.inc();
      log.warn({ event: 'queue_record_skipped', what, file }, 'retry queue: skipped a corrupt record; its lines are read again from the spool when unchanged');
    }
    readAgain();
  };
}

/**
 * acks.log holds damaged records (its CRCs fail where records follow): the
 * batches they acknowledged cannot be told and are sent again, so the
 * platform may store them twice. One ERROR naming the file and its ranges,
 * counted as corrupt records.
 */
export function queueAcksDamaged(metrics: Metrics, log: Logger): AcksDamagedHandler {
  return (file, ranges) => {
    metrics.queueCorrupt.inc(ranges.length);
    log.error(
      { event: 'queue_acks_corrupt', file, ranges: ranges.map((r) => [r.start, r.end]) },
      'retry queue: acknowledgement records are damaged; the batches they acknowledged cannot be told and are sent again (the platform may store them twice); nothing is lost',
    );
  };
}

/**
 * The retry queue moved a segment's waiting batches to its tail (compaction,
 * docs/delivery.md): DEBUG per move; a move the full disk undid is tried
 * again at the next acknowledgement (DEBUG); one that could not be undone
 * stops compaction until a restart (WARN: the files may outgrow queue.max_bytes).
 */
export function queueCompacted(log: Logger): (e: { segment: number; records: number; outcome: 'done' | 'failed' | 'stuck' }) => void {
  return ({ segment, records, outcome }) => {
    if (outcome === 'stuck') {
      log.warn({ event: 'queue_compaction_stopped', segment, records }, 'retry queue: a compaction failed and could not be undone; no more compaction until a restart, which finishes it (its files may grow past queue.max_bytes)');
    } else log.debug({ event: 'queue_compacted', segment, records, outcome }, outcome === 'done' ? 'retry queue: moved waiting batches out of a segment and deleted it' : 'retry queue: a compaction was undone (disk full); tried again at the next acknowledgement');
  };
}

/** api.token_file changed: parked requests are tried again at once. */
export function tokenChanged(log: Logger, retryParked: () => void): () => void {
  return () => {
    log.info({ event: 'token_changed' }, 'token file changed; retrying parked requests');
    retryParked();
  };
}

/** The token file changed to something that cannot be the token (empty, unreadable, a character no header carries): the token in use stays. Once per change. */
export function tokenFileRefused(log: Logger, file: string | null): (problem: string) => void {
  return (problem) => {
    log.warn({ event: 'token_file_refused', file, problem }, 'the changed token file cannot be used; the token in use stays until the file holds a usable one');
  };
}

/** A new client certificate and key are in use: new connections, and parked requests are tried again at once. */
export function clientCertChanged(log: Logger, renew: () => void): () => void {
  return () => {
    log.info({ event: 'client_cert_changed' }, 'client certificate or key changed; new connections use it, parked requests are retried');
    renew();
  };
}

/** The changed certificate files are not a usable pair (half-written, mismatched): the previous pair stays. Once per change. */
export function clientCertRefused(log: Logger): (problem: string) => void {
  return (problem) => {
    log.warn({ event: 'client_cert_refused', problem }, 'the changed client certificate files are not usable; the previous certificate stays in use');
  };
}

/** At start: the API is reached through a forward proxy (shown with its password as ***). */
export function proxyInUse(log: Logger, route: { shown: string; from: string; noProxy: string | null }): void {
  log.info({ event: 'proxy', proxy: route.shown, from: route.from, no_proxy: route.noProxy }, 'requests to the API go through a forward proxy');
}

/** state_dir had group or other bits (an emptyDir's 0777, an old umask's 0755): made 0700 at start. */
export function stateDirTightened(log: Logger, dir: string): (modeWas: string) => void {
  return (modeWas) => log.warn({ event: 'state_dir_tightened', dir, mode_was: modeWas }, `state_dir was mode ${modeWas}: made 0700, so no other user can replace what the agent keeps there`);
}

/** The state lock's words, for the agent's log and the commands' stderr alike. */
export function stateLockMessage(e: LockEvent): string {
  switch (e.kind) {
    case 'fallback':
      return `no usable flock program (${e.detail}): the state_dir lock is the lock file alone, which a third starter racing a takeover can slip past; install util-linux`;
    case 'waiting':
      return `the state_dir lock is held and no live owner is named in its lock file (an agent that just died, its flock still letting go): waiting up to ${e.waitMs} ms`;
    case 'lost':
      return `the flock process holding the state_dir lock ended (${e.detail}); the lock file alone guards the state_dir until the next start`;
  }
}

/** At start (fallback, waiting) or while running (lost): once each. */
export function stateLockEvents(log: Logger, dir: string): (e: LockEvent) => void {
  return (e) => {
    const msg = stateLockMessage(e);
    if (e.kind === 'fallback') log.warn({ event: 'state_lock_fallback', dir, reason: e.reason, detail: e.detail }, msg);
    else if (e.kind === 'waiting') log.info({ event: 'state_lock_waiting', dir, wait_ms: e.waitMs }, msg);
    else log.warn({ event: 'state_lock_lost', dir, detail: e.detail }, msg);
  };
}
