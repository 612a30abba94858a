// Wakes every waiter when something they wait on changes (unpark, pause
// lifted, probe finished), or after a timeout on the injected clock.
import type { Clock } from '../util/clock.js';

export class Notifier {
  private ac = new AbortController();

  wait(clock: Clock, ms: number): Promise<void> {
    return clock.sleep(Math.max(0, ms), this.ac.signal);
  }

  notify(): void {
    const old = this.ac;
    this.ac = new AbortController();
    old.abort();
  }
}
