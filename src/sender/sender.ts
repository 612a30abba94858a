// Delivers one closed batch until it is resolved: acknowledged, split and
// resolved piece by piece, or dead-lettered. The RetryPolicy (retry-policy.ts)
// decides; this module carries the decisions out. It is the one retry owner:
// undici never retries, and the request budget only paces starts. Its other
// decisions live beside it, each in its own module: the 413 learned limit
// (learned-limit.ts) and its episode (split-episode.ts), per-Data-Source
// refusals (ds-refusals.ts), the 400 bisection (bisection.ts), the in-flight
// bound (in-flight.ts), the waits for parks and Retry-After (clearance.ts),
// what an acknowledgement reports (ack-report.ts); deliveries.ts holds the
// batches being delivered, types.ts the shapes they all share.
//
// Invariant (docs/guarantees.md rule 3): a retry sends exactly the same bytes
// as the first attempt. Only a 413 or a 400 splits a batch, and those answers
// mean nothing of it was stored.
import type { SizeCaps } from '../batcher/batcher.js';
import type { LongLived } from '../util/lifecycle.js';
import type { SendOutcome } from './http-client.js';
import { InFlightBound } from './in-flight.js';
import { Clearance, holdsForState } from './clearance.js';
import { Notifier } from './notifier.js';
import { PARK_PROBE_INTERVAL_MS, Park } from './park.js';
import { classify, type BudgetParkReason } from './retry-policy.js';
import { reportAck } from './ack-report.js';
import { LearnedLimit } from './learned-limit.js';
import { DataSourceRefusals, type DsParkReason } from './ds-refusals.js';
import { Deliveries, newCtx } from './deliveries.js';
import { PROBE_BUDGET, endEpisode, nextPart, rawOf, rejectLine, split, startEpisode, takeRejects } from './bisection.js';
import { SplitEpisode } from './split-episode.js';
import type { BatchHistory, DeliverOptions, DeliveryCtx, DeliveryResult, Final, HeldBatch, Part, RootBatch, SenderHooks, SenderOptions } from './types.js';

export type { BatchHistory, BisectionEvent, DeliverOptions, DeliveryResult, HeldBatch, Part, RootBatch, SenderHooks, SenderOptions, SplitEvent } from './types.js';
export { PROBE_BUDGET } from './bisection.js';
export { AUTO_INITIAL_IN_FLIGHT, SLOTS_RESERVED_AHEAD } from './in-flight.js';
export type { BudgetParkReason, DsParkReason };

export class Sender implements LongLived, SizeCaps {
  readonly budgetPark: Park<BudgetParkReason>;
  private readonly refusals: DataSourceRefusals;
  private readonly notifier = new Notifier();
  /** Requests and bytes in flight, and their limit (in-flight.ts). */
  readonly inFlight: InFlightBound;
  private readonly learned: LearnedLimit;
  private readonly splits: SplitEpisode;
  private parkCause = { detail: null as string | null, status: 0, unconfirmed: false }; // what parked the budget (status 0: no answer)
  /** Parks and the Retry-After pause, waited for before each attempt. */
  private readonly clearance: Clearance;
  private stopping = false;
  /** Wakes and unparks so far: a refusal of a request sent before the latest is stale (sendUntilFinal). */
  private epoch = 0;
  /** destroy(): requests on the wire end at once. */
  private readonly cut = new AbortController();
  /** Deliveries under way, and the attempts of batches not yet done. */
  private readonly deliveries: Deliveries;

  constructor(private readonly o: SenderOptions) {
    this.inFlight = new InFlightBound(o);
    this.learned = new LearnedLimit({ clock: o.clock, maxBytes: o.maxBytes, onLower: () => this.inFlight.narrow(true), onChange: (bytes) => o.hooks.onLearnedLimit?.(bytes), memory: o.memory });
    this.deliveries = new Deliveries(o.clock, this.notifier);
    this.splits = new SplitEpisode({ learned: this.learned, deliveries: () => this.deliveries.all(), raise: (e) => o.hooks.onSplit?.(e) });
    this.refusals = new DataSourceRefusals(o.clock, this.notifier, (ds, r, prev, detail) => this.parkChanged({ ds }, r, prev, detail));
    this.budgetPark = new Park(o.clock, this.notifier, (r, p) => this.parkChanged('budget', r, p, r ? this.parkCause.detail : null, r !== null && this.parkCause.unconfirmed));
    this.clearance = new Clearance(o.clock, this.notifier, o.limiter, this.budgetPark, this.refusals, o.memory, o.stateHeld);
  }

  /** Size cap for new batches: max_bytes, or lower after a 413; one for the budget (the plan's limit), growing back 10 % per 5 minutes. */
  capFor(_ds?: string): number {
    return this.learned.capFor();
  }

  private parkChanged(...a: Parameters<SenderHooks['onParkChange']>): void {
    if (a[1] === null) this.epoch++;
    this.o.hooks.onParkChange(...a);
  }

  /** Parked Data Sources and why. */
  parkedDataSources(): Map<string, DsParkReason> {
    return this.refusals.parked();
  }

  /** Data Sources refused on their own: parked, or refused (403) while their 403 parks the budget before any proved the token (pipeline/parked-hold.ts). */
  refusedDataSources(): ReadonlySet<string> {
    return this.refusals.refusedNow(this.budgetPark.parked && this.parkCause.status === 403);
  }

  /** SIGHUP, token or client certificate change: probe parked budgets and Data Sources, end backoffs, now; with no batch to probe with (`nothingQueued` and none held), the budget unparks and the next batch proves the new token. */
  wake(nothingQueued = false): void {
    if (nothingQueued && this.deliveries.size === 0) this.budgetPark.unpark();
    this.epoch++;
    this.budgetPark.wake();
    this.refusals.wake();
    this.clearance.retryNow();
  }

  /** The state's hold (SenderOptions.stateHeld) changed: requests waiting for it look again. */
  readonly stateChanged = (): void => this.notifier.notify();

  /** An operator moved batches of a Data Source away (`spoolship queue dead-letter`): DataSourceRefusals.operatorMoved. */
  operatorMoved(ds: string): void {
    this.refusals.operatorMoved(ds, this.deliveries.hasDataSource(ds));
  }

  /** Milliseconds until a batch of `ds` may be sent as far as its own park goes (0: not parked, or its probe is due). */
  dsWaitMs(ds: string): number {
    return this.refusals.waitMs(ds);
  }

  /** Aborted at the next change of a park, a pause or a delivery (take it before looking at the parks). */
  changeSignal(): AbortSignal {
    return this.notifier.signal;
  }

  /** No new attempts: waiting deliveries end 'aborted' at once (their batches stay journal intents or queued, for the next start). Resolves when every delivery has ended (answered, or cut by destroy). */
  async close(): Promise<void> {
    this.stopping = true;
    for (const ctx of this.deliveries.all()) ctx.ac.abort();
    this.notifier.notify();
    while (this.deliveries.size > 0) await this.notifier.wait(this.o.clock, PARK_PROBE_INTERVAL_MS);
  }

  /** As close(), and the requests on the wire are cut: their batches' outcome is unknown, and they are sent again. */
  destroy(): Promise<void> {
    this.cut.abort();
    return this.close();
  }

  /** The batches being delivered now, oldest first. */
  held(): HeldBatch[] {
    return this.deliveries.held((ds) => this.budgetPark.parked || this.refusals.find(ds)?.parked === true);
  }

  /** Attempts and last answer of a batch (also of one waiting in the disk queue since). */
  history(id: number): BatchHistory | null {
    return this.deliveries.history(id);
  }

  /** The batch is gone for good without a delivery of its own ending 'done' (Deliveries.forget). */
  forget(id: number): void {
    this.deliveries.forget(id);
  }

  /** `spoolship queue dead-letter`: what of the batch is not yet acknowledged goes to the dead-letter store (Deliveries.release). */
  release(id: number): { wait: () => Promise<number | 'aborted'> } | null {
    return this.deliveries.release(id);
  }

  async deliver(root: RootBatch, opts: DeliverOptions = {}): Promise<DeliveryResult> {
    const ctx = newCtx(root, opts, this.o.clock.now());
    if (this.stopping || opts.signal?.aborted) ctx.ac.abort();
    const onAbort = () => {
      ctx.ac.abort();
      this.notifier.notify();
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    this.deliveries.start(ctx);
    this.splits.started(ctx);
    let result: DeliveryResult = 'aborted';
    try {
      for (;;) {
        const r = await this.resolveAll(ctx);
        const end = endEpisode(ctx, r);
        if (end) this.o.hooks.onBisection?.(end);
        if (r !== 'request_level') {
          // The probe batch of a parked Data Source resolved: the name is fine
          // (not so for a batch an operator released: it proved nothing).
          if (r === 'done' && ctx.holdsDsProbe && !ctx.released) this.refusals.park(root.ds).unpark();
          if (r === 'done') this.deliveries.forget(root.id);
          result = r;
          return r;
        }
        // Nothing of the batch was accepted and single lines from several of
        // its quarters were rejected (or the probe budget ran out): the request
        // itself is bad (the Data Source name, the token's scope). Park the
        // Data Source, keep the data; a waiting batch probes every 60 s.
        this.refusals.park(root.ds).park('bad_request');
        this.releaseDsProbe(ctx);
        Object.assign(ctx, { ...newCtx(root, opts, ctx.since), unknownOutcome: ctx.unknownOutcome, ac: ctx.ac, released: ctx.released, releasedLines: ctx.releasedLines });
        if (!ctx.released && opts.canDefer?.()) return (result = 'deferred');
        if (this.stopping) return 'aborted';
      }
    } finally {
      opts.signal?.removeEventListener('abort', onAbort);
      this.releaseDsProbe(ctx);
      this.deliveries.end(ctx);
      this.splits.ended(ctx, result);
      ctx.result = result;
      // A release waits for this delivery to end.
      this.notifier.notify();
    }
  }

  /** Every dead-letter write of a delivery goes through here, so the 400 episode's totals count it: one write for all `parts`. */
  private async deadLetter(ctx: DeliveryCtx, parts: ReadonlyArray<{ part: Part; raw: Buffer }>, reason: Parameters<SenderHooks['deadLetterLines']>[2], status: number | null): Promise<void> {
    if (parts.length === 0) return;
    await this.o.hooks.deadLetterLines(ctx.root, parts, reason, status);
    const lines = parts.reduce((n, p) => n + p.part.lines, 0);
    ctx.linesDeadLettered += lines;
    this.splits.deadLettered(ctx, lines);
  }

  private releaseDsProbe(ctx: DeliveryCtx): void {
    if (!ctx.holdsDsProbe) return;
    ctx.holdsDsProbe = false;
    this.refusals.find(ctx.root.ds)?.releaseProbe();
  }

  /**
   * Send the batch, and the pieces of it that a 400 or 413 calls for, until
   * every line is acknowledged or dead-lettered. Pieces wait in `work`; while
   * nothing is accepted, pieces from quarters with no rejected line yet go
   * first, so a request-level problem shows in O(log n) requests.
   */
  private async resolveAll(ctx: DeliveryCtx): Promise<DeliveryResult | 'request_level'> {
    const { root } = ctx;
    const whole: Part = { ds: root.ds, body: root.body, encoding: root.encoding, rawLen: root.rawLen, lines: root.lines, lineStart: 0 };
    const work: Part[] = [whole];
    while (work.length > 0) {
      const part = nextPart(work, ctx);
      if (this.learned.overLearned(part, ctx)) {
        // Formed before the limit was learned and never sent: cut it now
        // instead of collecting one more 413.
        work.push(...(await split(part, await rawOf(part), this.o.codec)).reverse());
        continue;
      }
      const v = ctx.released ? 'released' : await this.sendUntilFinal(part, ctx, part === whole);
      if (v === 'over_learned') {
        // A 413 of another batch lowered the limit while this piece waited for its turn.
        work.push(part);
        continue;
      }
      if (v === 'released') {
        // An operator gave up on the batch: what is not acknowledged yet goes to the dead-letter store.
        const left = [part, ...work.splice(0)].sort((a, b) => a.lineStart - b.lineStart);
        await this.deadLetter(ctx, await Promise.all(left.map(async (p) => ({ part: p, raw: await rawOf(p) }))), 'operator', this.deliveries.historyOf(root.id).lastStatus);
        ctx.releasedLines += left.reduce((n, p) => n + p.lines, 0);
        break;
      }
      if (v === 'aborted' || v === 'deferred') {
        if (ctx.accepted && ctx.opts.onUnresolved) await this.leaveUnresolved(ctx, [part, ...work.splice(0)]);
        return v;
      }
      const r = await this.handle(part, v, ctx, work);
      if (r) return r;
    }
    const rejected = takeRejects(ctx);
    await this.deadLetter(ctx, rejected, 'rejected', 400);
    // Released by an operator: these left the batch for the dead-letter store too (as rejected).
    if (ctx.released) ctx.releasedLines += rejected.reduce((n, r) => n + r.part.lines, 0);
    return 'done';
  }

  /**
   * Pieces of the batch were acknowledged and the rest cannot be resolved now
   * (the agent stops): the lines already isolated as rejected are final (the
   * batch is not a request-level problem: something of it was accepted) and
   * go to the dead-letter store; the caller keeps the other pieces.
   */
  private async leaveUnresolved(ctx: DeliveryCtx, pieces: Part[]): Promise<void> {
    await this.deadLetter(ctx, takeRejects(ctx), 'rejected', 400);
    ctx.opts.onUnresolved!(pieces.sort((a, b) => a.lineStart - b.lineStart));
  }

  /** Carry out a final verdict on one piece; 'request_level' ends the delivery, null goes on. */
  private async handle(part: Part, v: Final, ctx: DeliveryCtx, work: Part[]): Promise<'request_level' | null> {
    const { hooks } = this.o;
    if (v.kind === 'ack') {
      ctx.accepted = true;
      this.inFlight.narrow(false);
      if (ctx.holdsDsProbe) this.refusals.park(part.ds).unpark();
      reportAck(hooks, part, v);
      ctx.linesAcked += part.lines;
      this.splits.acked(ctx, part.lines);
      return null;
    }
    if (v.kind === 'dead_letter') {
      await this.deadLetter(ctx, [{ part, raw: await rawOf(part) }], v.reason, v.status);
      return null;
    }
    const raw = await rawOf(part);
    if (v.reason === '413') {
      if (part.lines > 1) {
        hooks.onRetry('413', part.ds);
        this.learned.lower(part.rawLen);
      }
      this.splits.refused(ctx, part);
      if (part.lines <= 1) {
        await this.deadLetter(ctx, [{ part, raw }], 'line_too_long', v.status);
        return null;
      }
    } else {
      if (part.lines <= 1) return rejectLine(ctx, part, raw);
      hooks.onRetry('400', part.ds);
      const start = startEpisode(ctx, part);
      if (start) hooks.onBisection?.(start);
      if (!ctx.accepted && ctx.probes >= (this.o.probeBudget ?? PROBE_BUDGET)) return 'request_level';
    }
    // Right half below the left one: the left is sent first.
    const [a, b] = await split(part, raw, this.o.codec);
    work.push(b, a);
    return null;
  }

  /** Send the same bytes until the answer is not a retry (or the agent stops, or the batch is deferred). */
  private async sendUntilFinal(part: Part, ctx: DeliveryCtx, mayDefer = false): Promise<Final | 'aborted' | 'deferred' | 'released' | 'over_learned'> {
    let attempt = 0;
    let afterGoaway = false;
    const defer = () => mayDefer && !ctx.bisecting && !ctx.released && ctx.opts.canDefer?.() === true;
    for (;;) {
      if (ctx.released && !this.stopping) return 'released';
      // A batch the early probe is on offer to waits for it (docs/answers.md, 403): deferred to the queue, it never came.
      if ((this.budgetPark.holdsBack(part.ds) || (!ctx.holdsDsProbe && this.refusals.find(part.ds)?.parked)) && defer()) return 'deferred';
      const holds = holdsForState(part.body);
      const probe = await this.clearance.waitUntilClear(part.ds, ctx, mayDefer && !ctx.bisecting && !ctx.released && ctx.opts.leaveWhenDsParked === true, holds);
      if (probe === 'aborted') return ctx.released && !this.stopping ? 'released' : 'aborted';
      if (probe === 'left') return 'deferred';
      const outcome = await this.request(part, probe, ctx, holds);
      if (outcome === 'over_learned') return outcome;
      if (outcome === null) {
        // Parked, paused by a Retry-After or stopping while waiting for a slot: not sent; decide again.
        if (probe) this.budgetPark.probeDone(false);
        continue;
      }
      if (ctx.bisecting) ctx.probes++;
      const v = classify(outcome, {
        attempt,
        afterGoaway,
        http2: this.o.http2,
        wait: this.o.wait ?? true,
        now: this.o.clock.now(),
        backoff: this.o.backoff,
        random: this.o.random,
      });
      const h = this.deliveries.historyOf(ctx.root.id);
      h.attempts++;
      h.lastStatus = outcome.kind === 'response' ? outcome.status : null;
      h.lastError = outcome.kind === 'response' ? (outcome.status >= 300 ? `HTTP ${outcome.status}` : null) : `${outcome.code}: ${outcome.message}`;
      if (outcome.kind === 'response' && outcome.status >= 200 && outcome.status < 300) this.refusals.accepted(part.ds);
      // Sent before a wake (a new token, SIGHUP) or an unpark: a refusal of what has changed since parks nothing, the request goes again.
      if (v.kind === 'park' && ctx.sentEpoch !== this.epoch) {
        if (probe) this.budgetPark.releaseProbe();
        continue;
      }
      let unconfirmed = false;
      if (v.kind === 'park' && outcome.kind === 'response' && outcome.status === 403) {
        const newly = !this.refusals.refused(part.ds);
        if (this.refusals.on403(part.ds) === 'datasource') {
          // The token is fine: this Data Source is refused. Park it alone.
          if (probe) this.budgetPark.probeDone(true);
          this.refusals.park(part.ds).park('datasource_rejected');
          this.releaseDsProbe(ctx);
          if (defer()) return 'deferred';
          continue;
        }
        // Nothing proves the token yet (a new directory answered first): the budget parks below, but one batch of a Data Source not refused probes
        // at once (again for each one newly refused, whose batches leave the reader's room), and its success parks this one alone; with such a batch under way the first park is unconfirmed.
        if (newly || (!probe && !this.budgetPark.parked)) this.budgetPark.probeNowFor((ds) => !this.refusals.refused(ds));
        if (newly && this.budgetPark.parked) this.o.hooks.onRefused?.(part.ds);
        if (!probe && !this.budgetPark.parked) unconfirmed = [...this.deliveries.all()].some((c) => c.root.ds !== part.ds && !this.refusals.refused(c.root.ds));
      }
      if (probe) this.budgetPark.probeDone(v.kind !== 'park');
      // A request under way when a 403 parked the budget was acknowledged: the token is fine (a missing Data Source answered first).
      else if (v.kind === 'ack' && this.budgetPark.parked && this.parkCause.status === 403) this.budgetPark.unpark();
      if (v.kind === 'park') {
        const confirms = this.budgetPark.parked && this.parkCause.unconfirmed; // parked again while unconfirmed: said now
        this.parkCause = { detail: v.detail, status: outcome.kind === 'response' ? outcome.status : 0, unconfirmed };
        this.budgetPark.park(v.reason, confirms);
        continue;
      }
      if (v.kind !== 'retry') return { ...v, status: outcome.kind === 'response' ? outcome.status : 0 } as Final;
      this.o.hooks.onRetry(v.reason, part.ds, outcome.kind === 'error' ? `${outcome.code}: ${outcome.message}` : `HTTP ${outcome.status}`);
      if (v.ignoredWait) this.o.hooks.onOddAnswer?.('ignored_wait', part.ds, v.ignoredWait);
      // A 5xx may have stored part of the batch; a reset or timeout may have stored all of it.
      if (v.reason !== '429') ctx.unknownOutcome = true;
      afterGoaway = v.reason === 'goaway';
      attempt++;
      const until = this.o.clock.now() + v.afterMs;
      if (v.pauseBudget) this.clearance.pause(until, v.afterMs);
      if (attempt >= (ctx.opts.deferAfter ?? Infinity) && defer()) return 'deferred';
      await this.clearance.sleepUntil(until, ctx, !v.pauseBudget);
      if (this.stopping) return 'aborted';
    }
  }

  /**
   * One request; null when the budget got parked or paused (or the sender stopped)
   * while this one waited for its slot; 'over_learned' when a 413 lowered the
   * learned limit below this piece meanwhile (the caller cuts it).
   */
  private request(part: Part, isProbe: boolean, ctx: DeliveryCtx, holds: boolean): Promise<SendOutcome | null | 'over_learned'> {
    const cutFirst = () => !isProbe && this.learned.overLearned(part, ctx);
    const mayGo = () => !(ctx.ac.signal.aborted || (this.budgetPark.parked && !isProbe) || this.clearance.paused || this.clearance.heldByState(holds));
    return this.inFlight.run(part.body.length, cutFirst, mayGo, async () => {
      const started = performance.now();
      ctx.sentEpoch = this.epoch;
      const outcome = await this.o.client.post(part.ds, part.body, part.encoding, this.cut.signal);
      const status = outcome.kind === 'response' ? outcome.status : 'error';
      this.o.hooks.onRequest(part.ds, status, (performance.now() - started) / 1000, part.body.length, outcome);
      return outcome;
    });
  }
}
