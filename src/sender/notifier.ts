// Wakes every waiter when something they wait on changes (unpark, pause
// lifted, probe finished), or after a timeout on the injected clock.
import { setMaxListeners } from 'node:events';
import type { Clock } from '../util/clock.js';

/**
 * One signal is shared by every waiter: max_in_flight batches backing off
 * plus the queue replayer's loops. Node warns past 10 listeners on one
 * AbortSignal (a "possible leak" on stderr during every outage); each
 * listener is removed when its wait ends, so there is no limit to enforce.
 */
function controller(): AbortController {
  const ac = new AbortController();
  setMaxListeners(0, ac.signal);
  return ac;
}

export class Notifier {
  private ac = controller();

  wait(clock: Clock, ms: number): Promise<void> {
    return clock.sleep(Math.max(0, ms), this.ac.signal);
  }

  /** Aborted by the next notify(): taken before looking, it also catches a change made while looking. */
  get signal(): AbortSignal {
    return this.ac.signal;
  }

  notify(): void {
    const old = this.ac;
    this.ac = controller();
    old.abort();
  }
}
