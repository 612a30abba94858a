// What a request waits for before it takes its turn in flight: its Data
// Source's park (ds-refusals.ts), the budget's park (park.ts), the pause
// a Retry-After put on the whole budget, and a state_dir that cannot record
// acknowledgements (full or read-only: each answer then is kept in memory
// only, and a kill -9 sent again everything acknowledged since the disk
// filled; docs/delivery.md). A spilled body goes on all the same: its answer
// frees the room it holds in the state_dir (pipeline/held-bodies.ts), and
// holding it could wait for good on a state_dir filled by such bodies.
// Every wait ends early when the delivery is aborted (the sender stops, or
// an operator released the batch).
import type { Clock } from '../util/clock.js';
import { SpilledBody, type Body } from './body.js';
import { BudgetMemory } from './budget-memory.js';
import type { DataSourceRefusals } from './ds-refusals.js';
import type { RateLimiter } from './limiter.js';
import type { Notifier } from './notifier.js';
import type { Park } from './park.js';
import type { BudgetParkReason } from './retry-policy.js';
import type { DeliveryCtx } from './types.js';

/** Does the state's hold apply to a request of this body: in memory (or read back from the disk queue), not spilled? */
export function holdsForState(body: Body): boolean {
  return !(body instanceof SpilledBody);
}

/** How often a request held by the state looks again if no change was told. */
const STATE_HOLD_LOOK_MS = 1000;

export class Clearance {
  /** retryNow() calls so far. */
  private retries = 0;

  constructor(
    private readonly clock: Clock,
    private readonly notifier: Notifier,
    private readonly limiter: RateLimiter,
    private readonly budgetPark: Park<BudgetParkReason>,
    private readonly refusals: DataSourceRefusals,
    /** Holds the pause (`pausedUntil`, clock ms): the process keeps it across a reload's new sender. */
    private readonly memory: BudgetMemory = new BudgetMemory(),
    /** The state cannot record acknowledgements now (the notifier is told when that changes). */
    private readonly stateHeld: () => boolean = () => false,
  ) {}

  /** A request the hold applies to (`holds`: holdsForState) may not go now: the state cannot record acknowledgements. */
  heldByState(holds: boolean): boolean {
    return holds && this.stateHeld();
  }

  /**
   * Retry-After pauses the whole budget (every Data Source) until `until`,
   * also when the batch that got it moves to the disk queue: the queue's
   * replay must not resend it before the server said.
   */
  pause(until: number, afterMs: number): void {
    if (until <= this.memory.pausedUntil) return;
    this.memory.pausedUntil = until;
    // With a shared budget, every agent of it waits too.
    this.limiter.pause(afterMs);
  }

  /** A Retry-After pause holds the budget now: a request that got its slot while waiting must not go (it waits here again). */
  get paused(): boolean {
    return this.clock.now() < this.memory.pausedUntil;
  }

  /**
   * Wait for parks, the Retry-After pause and (`holds`: holdsForState) the
   * state's hold; true when this request is the budget's probe. 'left' when
   * `mayLeave` and the Data Source is parked with its probe not due: the
   * caller keeps the batch (it stays queued).
   */
  async waitUntilClear(ds: string, ctx: DeliveryCtx, mayLeave: boolean, holds = false): Promise<boolean | 'aborted' | 'left'> {
    for (;;) {
      if (ctx.ac.signal.aborted) return 'aborted';
      if (this.heldByState(holds)) {
        // Told when it changes; the timeout is only a safety net.
        await this.notifier.wait(this.clock, STATE_HOLD_LOOK_MS);
        continue;
      }
      const dsPark = this.refusals.find(ds);
      if (dsPark?.parked && !ctx.holdsDsProbe && mayLeave) {
        // The caller has other batches to send meanwhile: probe if due, else leave.
        if (!dsPark.tryProbe()) return 'left';
        ctx.holdsDsProbe = true;
        continue;
      }
      if (dsPark?.parked && !ctx.holdsDsProbe) {
        // Every waiting batch of a parked Data Source may be its probe (every
        // 60 s, at once on wake): a batch replayed from the disk queue too.
        const mine = await dsPark.pass(ctx.ac.signal);
        if (mine) ctx.holdsDsProbe = true;
        continue;
      }
      // A caller with other batches (the queue replayer) does not wait for the budget's park: it probes if due, else leaves,
      // so that the early probe (docs/answers.md, 403) can go with another Data Source's batch; one on offer to it is taken.
      const leave = mayLeave && this.budgetPark.holdsBack(ds);
      const probe = leave ? this.budgetPark.tryProbe() || 'left' : await this.budgetPark.pass(ctx.ac.signal, ds);
      if (probe === 'left') return 'left';
      if (ctx.ac.signal.aborted) {
        if (probe) this.budgetPark.probeDone(false);
        return 'aborted';
      }
      if (this.clock.now() < this.memory.pausedUntil) {
        if (probe) this.budgetPark.probeDone(false);
        await this.sleepUntil(this.memory.pausedUntil, ctx);
        continue;
      }
      return probe;
    }
  }

  /**
   * What may have caused the failures changed (a SIGHUP, a new token or
   * client certificate): the backoffs under way end now (a Retry-After pause
   * does not: the server said when).
   */
  retryNow(): void {
    this.retries++;
    this.notifier.notify();
  }

  /** Until clock time `t`, or until the delivery is aborted; a `backoff` also until retryNow(). */
  async sleepUntil(t: number, ctx: DeliveryCtx, backoff = false): Promise<void> {
    const retries = this.retries;
    while (!ctx.ac.signal.aborted && !(backoff && this.retries !== retries)) {
      const ms = t - this.clock.now();
      if (ms <= 0) return;
      await this.notifier.wait(this.clock, ms);
    }
  }
}
