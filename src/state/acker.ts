// The one owner of state faults (README "When the disk is full"): every
// write to the state_dir (journal records and their group commits, queue
// records and acks, dead letters, checkpoints) that meets a full disk or an
// unwritable state_dir is reported here, retried here on the clock, and
// cleared here once a write works again. /readyz and
// spoolship_parked{reason="disk_full"|"state_dir_unwritable"} read it. Any
// other write error is fatal: the next start recovers from what is on disk.
//
// It also times the checkpoint. A checkpoint rewrites the whole state (6 MB
// of JSON for 20,000 files), the journal only what changed, so compacting
// costs in proportion to what was journaled: at most every
// CHECKPOINT_EVERY_MS, once the journals hold CHECKPOINT_JOURNAL_SHARE of the
// last checkpoint's size (at once for a small state), or once the journals
// have not grown for CHECKPOINT_QUIET_MS (a backlog is done: compact now, not
// later in the idle time); anything journaled is compacted within
// CHECKPOINT_MAX_EVERY_MS, and at once when the journals pass
// CHECKPOINT_JOURNAL_BYTES. A checkpoint that failed on a full or
// unwritable state_dir is tried again every CHECKPOINT_EVERY_MS; any other
// failure is fatal.
import type { Logger } from '../log.js';
import { after, type Clock } from '../util/clock.js';
import { isErrno } from '../util/fsx.js';
import { DestroyedError, type LongLived } from '../util/lifecycle.js';
import { setMaxListeners } from 'node:events';

/** A failed state write (disk full, state_dir unwritable) is tried again this often. */
export const STATE_RETRY_MS = 1000;
/** Compact the journal into the checkpoint at most this often (but see CHECKPOINT_JOURNAL_BYTES)... */
export const CHECKPOINT_EVERY_MS = 5000;
/** ...once the journals hold this share of the last checkpoint's bytes... */
export const CHECKPOINT_JOURNAL_SHARE = 0.25;
/** ...or once the journals have not grown for this long... */
export const CHECKPOINT_QUIET_MS = 5000;
/** ...and anything journaled at least this often, whatever its size. */
export const CHECKPOINT_MAX_EVERY_MS = 60_000;
/** ...or as soon as the journals hold this much. */
export const CHECKPOINT_JOURNAL_BYTES = 64 * 1024 * 1024;

export type StateFault = 'disk_full' | 'state_dir_unwritable' | null;

/** ENOSPC anywhere is "disk full"; a read-only or forbidden state_dir is "unwritable"; anything else is not an environment fault. */
export function classifyStateError(err: unknown): StateFault {
  if (isErrno(err, 'ENOSPC', 'EDQUOT')) return 'disk_full';
  if (isErrno(err, 'EROFS', 'EACCES', 'EPERM')) return 'state_dir_unwritable';
  return null;
}

/** What a part that writes state is given: each write waits out a full or unwritable state_dir. */
export interface StateWrites {
  retryStateWrite<T>(fn: () => Promise<T>): Promise<T>;
}

/** What the acker needs of the state store. */
export interface CheckpointedState {
  /** Bytes journaled since the last checkpoint. */
  readonly journalBytes: number;
  /** Size of the last checkpoint written (or read at start); 0 when none. */
  readonly checkpointBytes: number;
  /** Write the buffered journal records (a group commit). */
  flush(): Promise<void>;
  checkpoint(): Promise<void>;
}

export interface AckerEvents {
  /** The faults changed (the set /readyz and the parked gauge show). */
  onFaultsChange(faults: ReadonlySet<Exclude<StateFault, null>>): void;
  /** A write error that is not an environment fault. */
  onFatal(err: unknown): void;
}

export class Acker implements StateWrites, LongLived {
  /** From a state write or a journal group commit; cleared by the next one that works. */
  private writeFault: StateFault = null;
  /** From the checkpoint; cleared by the next checkpoint that works. */
  private checkpointFault: StateFault = null;
  private checkpointing: Promise<void> | null = null;
  private destroyed = false;
  /**
   * The store wrote a checkpoint as it loaded (state/store.ts), just before
   * the acker was made: the next one follows the rules below from there, not
   * at the first tick (with 10,000 files, a rewrite of megabytes while the
   * agent starts).
   */
  private lastCheckpointAt: number;
  /** The journals' size at the last tick, and when it last changed. */
  private journaledBefore = 0;
  private journalGrewAt = Number.NEGATIVE_INFINITY;
  /** Cancels the pending journal flush retry, or null. */
  private flushRetry: (() => void) | null = null;
  private closed = false;
  /** Aborted by destroy(): writes waiting out a fault end at once, not at their next try (after the stop). */
  private readonly abandon = new AbortController();

  constructor(
    private readonly state: CheckpointedState,
    private readonly o: { clock: Clock; log: Logger; stateDir: string; events: AckerEvents },
  ) {
    this.lastCheckpointAt = o.clock.now();
    // Every write waiting out a fault listens on it: the spills of up to
    // max_in_flight bodies at once (Node warned on stderr past 10).
    setMaxListeners(0, this.abandon.signal);
  }

  /**
   * A state write failed for a full or read-only state_dir and has not
   * worked since: acknowledgements cannot be recorded, so no request starts
   * (sender/clearance.ts). A checkpoint fault alone holds nothing: the
   * journal still records them.
   */
  get writesHeld(): boolean {
    return this.writeFault !== null;
  }

  /** The state faults now, each once (readiness reasons). */
  get faults(): Array<Exclude<StateFault, null>> {
    return [...this.faultSet()];
  }

  /**
   * Run a state write (journal, queue, dead letters); on ENOSPC / a
   * read-only state_dir report the fault and try again every
   * STATE_RETRY_MS until it works. Any other error is thrown.
   */
  async retryStateWrite<T>(fn: () => Promise<T>): Promise<T> {
    // Only a write that failed and now worked clears the fault: an in-memory
    // step (completeBatch only buffers its journal record) succeeding says
    // nothing about the disk, and clearing on it made /readyz flap to 200
    // while the state_dir was still full.
    let failed = false;
    for (;;) {
      try {
        const r = await fn();
        if (failed) this.setWriteFault(null);
        return r;
      } catch (err) {
        const fault = classifyStateError(err);
        if (!fault) throw err;
        failed = true;
        this.setWriteFault(fault);
        if (this.destroyed) throw new DestroyedError('the acker');
        await this.o.clock.sleep(STATE_RETRY_MS, this.abandon.signal);
        if (this.destroyed) throw new DestroyedError('the acker');
      }
    }
  }

  /**
   * A journal group commit failed in the background (the store's
   * onBackgroundError). A full or unwritable state_dir: report it and flush
   * again every STATE_RETRY_MS until it works (the records stay buffered).
   * Anything else (an fsync failure) is fatal.
   */
  journalFailed(err: unknown): void {
    const fault = classifyStateError(err);
    if (!fault) return this.o.events.onFatal(err);
    this.setWriteFault(fault);
    if (this.flushRetry || this.closed) return;
    this.flushRetry = after(this.o.clock, STATE_RETRY_MS, () => {
      this.flushRetry = null;
      this.state.flush().then(
        () => this.setWriteFault(null),
        (e) => this.journalFailed(e),
      );
    });
  }

  /** Called on the agent's tick: checkpoint when it is time. */
  tick(): void {
    if (this.checkpointing || this.closed) return;
    const now = this.o.clock.now();
    // Nothing journaled since the last checkpoint, and the last one did not
    // fail: nothing to compact (with 20,000 files a checkpoint is a few MB
    // of JSON, every 5 s while idle).
    const journaled = this.state.journalBytes;
    if (journaled !== this.journaledBefore) {
      this.journaledBefore = journaled;
      this.journalGrewAt = now;
    }
    if (journaled === 0 && this.checkpointFault === null) return;
    const since = now - this.lastCheckpointAt;
    const quiet = now - this.journalGrewAt >= CHECKPOINT_QUIET_MS;
    const due =
      journaled > CHECKPOINT_JOURNAL_BYTES ||
      since >= CHECKPOINT_MAX_EVERY_MS ||
      (since >= CHECKPOINT_EVERY_MS && (this.checkpointFault !== null || quiet || journaled >= this.state.checkpointBytes * CHECKPOINT_JOURNAL_SHARE));
    if (!due) return;
    this.lastCheckpointAt = now;
    this.checkpointing = this.state
      .checkpoint()
      .then(() => this.setCheckpointFault(null))
      .catch((err) => {
        // ENOSPC / EROFS / EACCES while compacting: the state_dir cannot take
        // new files. Reported like any state fault; cleared by the next
        // checkpoint that works. Anything else (EIO from an fsync) is fatal,
        // as for every other state write: after a failed fsync the page
        // cache may have dropped the data, so a retry can report success
        // for bytes that never reached the disk.
        const fault = classifyStateError(err);
        if (!fault) {
          this.closed = true;
          return this.o.events.onFatal(err);
        }
        // Said once when the fault begins (checkpoint_fault, with the error), not at every retry.
        this.setCheckpointFault(fault, err);
      })
      .finally(() => (this.checkpointing = null));
  }

  /** Stop retrying and checkpointing on the clock; resolves when a checkpoint under way has ended. */
  async close(): Promise<void> {
    this.closed = true;
    this.flushRetry?.();
    this.flushRetry = null;
    await this.checkpointing;
  }

  /** As close(), and state writes waiting out a full or read-only state_dir give up (DestroyedError). */
  destroy(): Promise<void> {
    this.destroyed = true;
    this.abandon.abort();
    return this.close();
  }

  private setWriteFault(f: StateFault): void {
    if (f === this.writeFault) return;
    this.writeFault = f;
    if (f) this.o.log.error({ event: 'state_fault', fault: f, state_dir: this.o.stateDir }, 'state_dir not writable: not advancing; will resume by itself');
    else this.o.log.info({ event: 'state_fault_cleared' }, 'state_dir writable again: resuming');
    this.o.events.onFaultsChange(this.faultSet());
  }

  private setCheckpointFault(f: StateFault, err?: unknown): void {
    if (f === this.checkpointFault) return;
    const previous = this.checkpointFault;
    this.checkpointFault = f;
    if (f) this.o.log.error({ event: 'checkpoint_fault', fault: f, state_dir: this.o.stateDir, err: String(err) }, 'state_dir: cannot write the checkpoint; retried every 5 s, resumes by itself');
    else this.o.log.info({ event: 'checkpoint_fault_cleared', previous }, 'state_dir: checkpoint written again');
    this.o.events.onFaultsChange(this.faultSet());
  }

  private faultSet(): Set<Exclude<StateFault, null>> {
    const s = new Set<Exclude<StateFault, null>>();
    if (this.writeFault) s.add(this.writeFault);
    if (this.checkpointFault) s.add(this.checkpointFault);
    return s;
  }
}
