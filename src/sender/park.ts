// A parked budget (token rejected, wrong region) or Data Source (request-level
// 400). Nothing is dropped while parked: senders wait here. Every
// `probeIntervalMs` one request is let through as a probe; a success unparks,
// and `wake()` (SIGHUP, token file change) lets a probe through at once.
// While it stays parked its owner hears so once an interval: the log says
// it once a minute (docs/answers.md, 401/403).
import type { Clock } from '../util/clock.js';
import type { Notifier } from './notifier.js';

export const PARK_PROBE_INTERVAL_MS = 60_000;

export class Park<R extends string> {
  reason: R | null = null;
  private nextProbeAt = 0;
  private probing = false;
  /** wake() calls so far, and their number when the probe under way started: a wake during a probe is not undone by its failure. */
  private wakes = 0;
  private wakesAtProbe = 0;
  /** probeNowFor(): one probe may go at once, by a caller whose key this accepts. */
  private early: ((key: string) => boolean) | null = null;
  /** When onChange last heard a park (clock ms). */
  private toldAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly clock: Clock,
    private readonly notifier: Notifier,
    private readonly onChange: (reason: R | null, previous: R | null) => void,
    private readonly probeIntervalMs = PARK_PROBE_INTERVAL_MS,
  ) {}

  get parked(): boolean {
    return this.reason !== null;
  }

  /**
   * Park (again). onChange hears a new reason at once, and the same reason
   * again (still parked: a failed probe) once a probe interval at most, so
   * the log says it once a minute, not once per refused request; `tell`:
   * heard now whatever the interval (an unconfirmed park confirmed).
   */
  park(reason: R, tell = false): void {
    const previous = this.reason;
    this.reason = reason;
    this.nextProbeAt = this.nextAfterFailure();
    const now = this.clock.now();
    if (!tell && previous === reason && now - this.toldAt < this.probeIntervalMs) return;
    this.toldAt = now;
    this.onChange(reason, previous);
  }

  /**
   * A whole interval after a failure, unless wake() came while the probe
   * that failed was on the wire: it was sent before what the wake stands
   * for (a new token, a SIGHUP), so the next probe goes at once.
   */
  private nextAfterFailure(): number {
    return this.probing && this.wakes !== this.wakesAtProbe ? 0 : this.clock.now() + this.probeIntervalMs;
  }

  unpark(): void {
    if (this.reason === null) return;
    const previous = this.reason;
    this.reason = null;
    this.early = null;
    this.onChange(null, previous);
    this.notifier.notify();
  }

  /** Let the next waiter probe now (SIGHUP, token file changed). */
  wake(): void {
    this.wakes++;
    this.nextProbeAt = 0;
    this.notifier.notify();
  }

  /**
   * The park's cause may lie with some callers alone (a 403 for one Data
   * Source, before any other proved the token): one probe may go at once,
   * by a caller whose key `eligible` accepts. Its failure does not grant
   * another: the next probes keep the interval.
   */
  probeNowFor(eligible: (key: string) => boolean): void {
    this.early = eligible;
    this.notifier.notify();
  }

  /** Parked for the caller keyed `key`: parked, and the early probe not on offer to it (looking does not take it). */
  holdsBack(key: string): boolean {
    return this.reason !== null && !(this.early !== null && this.early(key));
  }

  /** May the caller keyed `key` take the early probe? (Taking it uses it up.) */
  private takesEarly(key: string | undefined): boolean {
    if (this.early === null || key === undefined || !this.early(key)) return false;
    this.early = null;
    return true;
  }

  /**
   * Wait until not parked, or until this caller may send a probe. Returns
   * true when the caller holds the probe and must call `probeDone`. `key`
   * names the caller for probeNowFor (a Data Source).
   */
  async pass(signal?: AbortSignal, key?: string): Promise<boolean> {
    while (this.reason !== null && !signal?.aborted) {
      const now = this.clock.now();
      if (!this.probing && (now >= this.nextProbeAt || this.takesEarly(key))) {
        this.probing = true;
        this.wakesAtProbe = this.wakes;
        return true;
      }
      await this.notifier.wait(this.clock, this.probing ? this.probeIntervalMs : this.nextProbeAt - now);
    }
    return false;
  }

  /**
   * Take the probe if one may go now, without waiting: for a caller that has
   * other work to do meanwhile (the queue replayer).
   */
  tryProbe(): boolean {
    if (this.reason === null || this.probing || this.clock.now() < this.nextProbeAt) return false;
    this.probing = true;
    this.wakesAtProbe = this.wakes;
    return true;
  }

  /** Milliseconds until a probe may go: 0 when not parked or due now; a whole interval while one is under way. */
  probeWaitMs(): number {
    if (this.reason === null) return 0;
    if (this.probing) return this.probeIntervalMs;
    return Math.max(0, this.nextProbeAt - this.clock.now());
  }

  /** The probe holder resends on its own terms (a Data Source park's owner). */
  releaseProbe(): void {
    this.probing = false;
  }

  probeDone(ok: boolean): void {
    if (ok) {
      this.probing = false;
      this.unpark();
      return;
    }
    this.nextProbeAt = this.nextAfterFailure();
    this.probing = false;
    this.notifier.notify();
  }
}
