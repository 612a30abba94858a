// How many requests this agent keeps in flight with limits.max_in_flight:
// auto (README "Concurrency"). The model is TCP's window, as in Vector's
// adaptive request concurrency:
//
// - slow start: the limit doubles every round trip in which it was reached,
//   until the first sign of congestion;
// - then additive increase: +1 per round trip in which the limit was reached
//   and the answer time held (a limit never reached says nothing: the agent
//   had no more to send, so it does not grow);
// - multiplicative decrease: halve on a 429, a 503 or a timeout (at most once
//   per round trip), and when the round trip's mean answer time rose past
//   RTT_RISE x the baseline (a moving average of past round trips, so that a
//   lasting change of network is learned within a few round trips);
// - always between 1 and `cap` (max_in_flight_cap, max_connections).
//
// A fixed max_in_flight is a controller that never moves. Time comes from
// the injected clock: tests drive round trips on a manual clock.
import type { Clock } from '../util/clock.js';

/** Mean answer time this far above the baseline is congestion. */
export const RTT_RISE = 1.5;
/** ...and at least this much above it (noise on fast answers is not congestion). */
export const RTT_RISE_MIN_MS = 50;
/** Weight of the latest round trip in the baseline (an exponential moving average). */
const BASELINE_WEIGHT = 0.25;
/** A round trip is never counted shorter than this. */
const MIN_ROUND_MS = 10;

export type AnswerKind = 'ok' | 'congested' | 'other';

export class ConcurrencyLimit {
  private current: number;
  private slowStart: boolean;
  private roundStart: number;
  private roundRttSum = 0;
  private roundAnswers = 0;
  private reached = false;
  private baselineMs = Infinity;
  private lastDecreaseAt = -Infinity;

  constructor(
    private readonly clock: Clock,
    private readonly o: { auto: boolean; initial: number; cap: number; onChange?: (limit: number) => void },
  ) {
    this.current = o.auto ? Math.min(o.initial, o.cap) : o.initial;
    this.slowStart = o.auto;
    this.roundStart = clock.now();
  }

  get limit(): number {
    return this.current;
  }

  /** A request starts with `inFlight` (itself included) in flight. */
  onStart(inFlight: number): void {
    if (inFlight >= this.current) this.reached = true;
  }

  /** An answer came after `rttMs`: ok (2xx), congested (429, 503, timeout) or other. */
  onAnswer(rttMs: number, kind: AnswerKind): void {
    if (!this.o.auto) return;
    const now = this.clock.now();
    if (kind === 'congested') {
      this.decrease(now);
      return;
    }
    if (kind === 'ok') {
      this.roundRttSum += rttMs;
      this.roundAnswers++;
    }
    const roundMs = Math.max(MIN_ROUND_MS, Number.isFinite(this.baselineMs) ? this.baselineMs : rttMs);
    if (now - this.roundStart >= roundMs && this.roundAnswers > 0) this.endRound(now);
  }

  private endRound(now: number): void {
    const mean = this.roundRttSum / this.roundAnswers;
    const rose = Number.isFinite(this.baselineMs) && mean > this.baselineMs * RTT_RISE && mean - this.baselineMs > RTT_RISE_MIN_MS;
    if (rose) this.decrease(now);
    else if (this.reached) this.set(this.slowStart ? this.current * 2 : this.current + 1);
    this.baselineMs = Number.isFinite(this.baselineMs) ? this.baselineMs * (1 - BASELINE_WEIGHT) + mean * BASELINE_WEIGHT : mean;
    this.roundStart = now;
    this.roundRttSum = 0;
    this.roundAnswers = 0;
    this.reached = false;
  }

  private decrease(now: number): void {
    this.slowStart = false;
    // Once per round trip: the answers of one congested round all say so.
    const roundMs = Number.isFinite(this.baselineMs) ? Math.max(MIN_ROUND_MS, this.baselineMs) : MIN_ROUND_MS;
    if (now - this.lastDecreaseAt < roundMs) return;
    this.lastDecreaseAt = now;
    this.set(Math.floor(this.current / 2));
    this.roundStart = now;
    this.roundRttSum = 0;
    this.roundAnswers = 0;
    this.reached = false;
  }

  private set(n: number): void {
    const next = Math.max(1, Math.min(this.o.cap, n));
    if (next === this.current) return;
    this.current = next;
    this.o.onChange?.(next);
  }
}
