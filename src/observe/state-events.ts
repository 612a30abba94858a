// What the state side tells operators: the parked gauge for a full or
// unwritable state_dir (the acker's faults), a line the full dead-letter
// store could not keep, a queue record skipped as torn or corrupt, a
// changed token file, and a loose state_dir made 0700.
import type { DeadLetterInput } from '../deadletter/store.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import type { StateFault } from '../state/acker.js';

export function stateFaultGauge(metrics: Metrics): (faults: ReadonlySet<Exclude<StateFault, null>>) => void {
  return (faults) => {
    for (const reason of ['disk_full', 'state_dir_unwritable'] as const) metrics.parked.set({ reason }, faults.has(reason) ? 1 : 0);
  };
}

/** dead_letter.max_bytes reached: the line is lost, counted and logged. */
export function deadLetterDropped(metrics: Metrics, log: Logger, maxBytes: number): (input: DeadLetterInput) => void {
  return (input) => {
    metrics.deadLetterDropped.inc();
    metrics.linesLost.inc({ datasource: input.datasource, reason: 'dead_letter_full' });
    log.error({ datasource: input.datasource, reason: input.reason, max_bytes: maxBytes }, 'dead-letter store full: line dropped; raise dead_letter.max_bytes or replay/clear it');
  };
}

/** A torn or corrupt queue record: counted, logged, and `readAgain` looks for its lines in the spool. */
export function queueRecordSkipped(metrics: Metrics, log: Logger, readAgain: () => void): (what: string) => void {
  return (what) => {
    metrics.queueCorrupt.inc();
    log.warn({ event: 'queue_record_skipped', what }, 'retry queue: skipped a torn or corrupt record; its lines are read again from the spool when unchanged');
    readAgain();
  };
}

/** api.token_file changed: parked requests are tried again at once. */
export function tokenChanged(log: Logger, retryParked: () => void): () => void {
  return () => {
    log.info({ event: 'token_changed' }, 'token file changed; retrying parked requests');
    retryParked();
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
