// A start on a full or read-only state_dir waits, as a running agent does
// (docs/delivery.md "A full disk is a state, not a crash": it resumes by
// itself when space returns): the state's opening (its lock, the checkpoint
// written at load, the journal, the dead-letter store and the disk queue) is
// undone and tried again every STATE_RETRY_MS. Meanwhile /readyz answers
// 503 with the reason, spoolship_parked{reason} is 1 and one ERROR
// state_fault says what to do; a stop (SIGTERM) ends the wait.
import { classifyStateError, STATE_RETRY_MS, type StateFault } from '../state/acker.js';
import type { Clock } from '../util/clock.js';

/** A stop asked for while the start waited for its state_dir: the agent never started (exit 0). */
export class StartStoppedError extends Error {
  constructor() {
    super('stopped while the start waited for its state_dir');
    this.name = 'StartStoppedError';
  }
}

export interface StateWaitOptions {
  clock: Clock;
  /** Aborted by a stop. */
  signal?: AbortSignal;
  /** Ends what a failed try opened (the lock first of all: another agent may take it meanwhile). */
  undo(err: unknown): Promise<void>;
  /** The fault changed: set when a try fails for it (with that try's error), null when a try after one works. */
  onFault(fault: StateFault, err?: unknown): void;
}

/** Run `open` until it works; a fault of the state_dir's file system waits, any other error is thrown. */
export async function openWaitingForStateDir(open: () => Promise<void>, o: StateWaitOptions): Promise<void> {
  let fault: StateFault = null;
  for (;;) {
    try {
      await open();
      if (fault) o.onFault(null);
      return;
    } catch (err) {
      const now = classifyStateError(err);
      if (!now) throw err;
      await o.undo(err);
      if (now !== fault) o.onFault(now, err);
      fault = now;
    }
    if (o.signal?.aborted) throw new StartStoppedError();
    await o.clock.sleep(STATE_RETRY_MS, o.signal);
    if (o.signal?.aborted) throw new StartStoppedError();
  }
}
