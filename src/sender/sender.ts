// Delivers one closed batch until it is resolved: acknowledged, split and
// resolved piece by piece, or dead-lettered. The RetryPolicy (retry-policy.ts)
// decides; this module carries the decisions out. It is the one retry owner:
// undici and bottleneck never retry.
//
// Invariant (DESIGN 3): a retry sends exactly the same bytes as the first
// attempt. Only a 413 or a 400 splits a batch, and those answers mean nothing
// of it was stored.
import { decodeBody, type Codec } from '../codec/index.js';
import type { Clock } from '../util/clock.js';
import type { EventsClient, SendOutcome } from './http-client.js';
import { Semaphore, type RateLimiter } from './limiter.js';
import { Notifier } from './notifier.js';
import { Park } from './park.js';
import { classify, type BackoffOptions, type RetryReason, type Verdict } from './retry-policy.js';

/** 400 bisection: requests one batch may spend isolating bad lines before the problem counts as request-level. */
export const PROBE_BUDGET = 64;
/** After a 413 the learned size limit grows back by this fraction per success. */
const LEARNED_RECOVERY = 1.05;
const MIN_LEARNED_BYTES = 1024;

export type BudgetParkReason = 'token_rejected' | 'workspace_not_found';

export interface RootBatch {
  id: number;
  ds: string;
  /** Compressed body: the exact bytes of every attempt. */
  body: Buffer;
  /** Content-Encoding of `body` (a queued batch keeps the codec it was compressed with). */
  encoding: string | null;
  rawLen: number;
  lines: number;
}

/** A piece of a root batch: the whole of it, or a half of a half... */
export interface Part {
  ds: string;
  body: Buffer;
  encoding: string | null;
  rawLen: number;
  lines: number;
  /** Index of the part's first line among the root batch's lines. */
  lineStart: number;
}

export interface SenderHooks {
  onRequest(ds: string, status: number | 'error', seconds: number, wireBytes: number): void;
  onRetry(reason: RetryReason, ds: string): void;
  onAck(ds: string, lines: number, rawBytes: number): void;
  onParkChange(scope: 'budget' | { ds: string }, reason: string | null, previous: string | null): void;
  /** Store the part's lines as dead letters (durably) before the batch counts as done. */
  deadLetterLines(root: RootBatch, part: Part, raw: Buffer, reason: 'rejected' | 'line_too_long' | 'materialized_view_error', status: number): Promise<void>;
}

export interface SenderOptions {
  client: Pick<EventsClient, 'post'>;
  codec: Codec;
  limiter: RateLimiter;
  clock: Clock;
  random: () => number;
  backoff: BackoffOptions;
  http2: boolean;
  maxInFlight: number;
  maxBytes: number;
  hooks: SenderHooks;
}

/**
 * done: acknowledged or dead-lettered; aborted: the sender is stopping;
 * deferred: not deliverable now (quick attempts used up, or parked) and the
 * caller said it can keep the batch elsewhere (the disk queue).
 */
export type DeliveryResult = 'done' | 'aborted' | 'deferred';

export interface DeliverOptions {
  /** Asked before deferring: may the caller take the batch back now? */
  canDefer?: () => boolean;
  /** Failed attempts before a batch is deferred. */
  deferAfter?: number;
}
type Final = Exclude<Verdict, { kind: 'retry' } | { kind: 'park' }> & { status: number };

interface Ctx {
  root: RootBatch;
  opts: DeliverOptions;
  bisecting: boolean;
  probes: number;
  ownsDsPark: boolean;
}

export class Sender {
  readonly budgetPark: Park<BudgetParkReason>;
  private readonly dsParks = new Map<string, Park<'bad_request'>>();
  private readonly notifier = new Notifier();
  private readonly inFlight: Semaphore;
  private readonly learned = new Map<string, number>();
  private pausedUntil = 0;
  private stopping = false;
  private readonly stopAc = new AbortController();

  constructor(private readonly o: SenderOptions) {
    this.inFlight = new Semaphore(o.maxInFlight);
    this.budgetPark = new Park(o.clock, this.notifier, (r, p) => o.hooks.onParkChange('budget', r, p));
  }

  /** Size cap for new batches of a Data Source: max_bytes, or lower after a 413. */
  capFor(ds: string): number {
    return Math.floor(this.learned.get(ds) ?? this.o.maxBytes);
  }

  dsPark(ds: string): Park<'bad_request'> {
    let p = this.dsParks.get(ds);
    if (!p) {
      p = new Park(this.o.clock, this.notifier, (r, prev) => this.o.hooks.onParkChange({ ds }, r, prev));
      this.dsParks.set(ds, p);
    }
    return p;
  }

  parkedDataSources(): string[] {
    return [...this.dsParks].filter(([, p]) => p.parked).map(([ds]) => ds);
  }

  /** SIGHUP / token file change: probe parked budgets and Data Sources now. */
  wake(): void {
    this.budgetPark.wake();
    for (const p of this.dsParks.values()) p.wake();
  }

  /** No new attempts; waiting batches return 'aborted' (their intents stay for the next start). */
  stop(): void {
    this.stopping = true;
    this.stopAc.abort();
    this.notifier.notify();
  }

  get requestsInFlight(): number {
    return this.inFlight.inUse;
  }

  async deliver(root: RootBatch, opts: DeliverOptions = {}): Promise<DeliveryResult> {
    const whole: Part = { ds: root.ds, body: root.body, encoding: root.encoding, rawLen: root.rawLen, lines: root.lines, lineStart: 0 };
    const ctx: Ctx = { root, opts, bisecting: false, probes: 0, ownsDsPark: false };
    for (;;) {
      const r = await this.resolve(whole, ctx, 0);
      if (r !== 'request_level') return r;
      if (opts.canDefer?.()) {
        this.dsPark(root.ds).park('bad_request');
        return 'deferred';
      }
      // Both halves of the first split failed, or the probe budget ran out:
      // the request itself is bad (e.g. the Data Source name). Park the Data
      // Source, keep the data, and try this batch again later.
      const park = this.dsPark(root.ds);
      park.park('bad_request');
      ctx.ownsDsPark = true;
      ctx.bisecting = false;
      ctx.probes = 0;
      if (await park.pass(this.stopAc.signal)) park.releaseProbe();
      if (this.stopping) return 'aborted';
    }
  }

  private async resolve(part: Part, ctx: Ctx, depth: number): Promise<DeliveryResult | 'request_level'> {
    const v = await this.sendUntilFinal(part, ctx, depth === 0 && !ctx.bisecting);
    if (v === 'aborted' || v === 'deferred') return v;
    return this.handle(part, v, ctx, depth);
  }

  private async handle(part: Part, v: Final, ctx: Ctx, depth: number): Promise<DeliveryResult | 'request_level'> {
    if (v.kind === 'ack') {
      if (ctx.ownsDsPark && depth === 0) this.dsPark(part.ds).unpark();
      this.growLearned(part.ds);
      this.o.hooks.onAck(part.ds, part.lines, part.rawLen);
      return 'done';
    }
    if (v.kind === 'dead_letter') {
      await this.o.hooks.deadLetterLines(ctx.root, part, await this.raw(part), v.reason, v.status);
      return 'done';
    }
    // split
    const raw = await this.raw(part);
    if (part.lines <= 1) {
      await this.o.hooks.deadLetterLines(ctx.root, part, raw, v.reason === '413' ? 'line_too_long' : 'rejected', v.status);
      return 'done';
    }
    this.o.hooks.onRetry(v.reason, part.ds);
    if (v.reason === '413') this.learned.set(part.ds, Math.max(MIN_LEARNED_BYTES, Math.min(this.capFor(part.ds), part.rawLen / 2)));
    else {
      if (ctx.ownsDsPark && depth === 0) this.dsPark(part.ds).unpark();
      ctx.bisecting = true;
      if (ctx.probes >= PROBE_BUDGET) return 'request_level';
    }
    const [a, b] = await this.split(part, raw);
    if (v.reason === '400' && depth === 0) {
      const va = await this.sendUntilFinal(a, ctx);
      if (va === 'aborted' || va === 'deferred') return va;
      const vb = await this.sendUntilFinal(b, ctx);
      if (vb === 'aborted' || vb === 'deferred') return vb;
      if (isBad(va) && isBad(vb)) return 'request_level';
      const ra = await this.handle(a, va, ctx, 1);
      if (ra !== 'done') return ra;
      return this.handle(b, vb, ctx, 1);
    }
    const ra = await this.resolve(a, ctx, depth + 1);
    if (ra !== 'done') return ra;
    return this.resolve(b, ctx, depth + 1);
  }

  /** Send the same bytes until the answer is not a retry (or the agent stops, or the batch is deferred). */
  private async sendUntilFinal(part: Part, ctx: Ctx, mayDefer = false): Promise<Final | 'aborted' | 'deferred'> {
    let attempt = 0;
    let afterGoaway = false;
    const defer = () => mayDefer && ctx.opts.canDefer?.() === true;
    for (;;) {
      if (defer() && (this.budgetPark.parked || (!ctx.ownsDsPark && this.dsParks.get(part.ds)?.parked))) return 'deferred';
      const probe = await this.waitUntilClear(part.ds, ctx);
      if (probe === 'aborted') return 'aborted';
      const outcome = await this.request(part, probe);
      if (outcome === null) {
        // Parked or stopping while waiting for a slot: not sent; decide again.
        if (probe) this.budgetPark.probeDone(false);
        continue;
      }
      if (ctx.bisecting) ctx.probes++;
      const v = classify(outcome, {
        attempt,
        afterGoaway,
        http2: this.o.http2,
        now: this.o.clock.now(),
        backoff: this.o.backoff,
        random: this.o.random,
      });
      if (probe) this.budgetPark.probeDone(v.kind !== 'park');
      if (v.kind === 'park') {
        this.budgetPark.park(v.reason);
        continue;
      }
      if (v.kind !== 'retry') return { ...v, status: outcome.kind === 'response' ? outcome.status : 0 } as Final;
      this.o.hooks.onRetry(v.reason, part.ds);
      afterGoaway = v.reason === 'goaway';
      attempt++;
      if (attempt >= (ctx.opts.deferAfter ?? Infinity) && defer()) return 'deferred';
      const until = this.o.clock.now() + v.afterMs;
      if (v.pauseBudget && until > this.pausedUntil) {
        // Retry-After pauses the whole budget: every Data Source waits.
        this.pausedUntil = until;
      }
      await this.sleepUntil(until);
      if (this.stopping) return 'aborted';
    }
  }

  /** Wait for parks and the Retry-After pause; true when this request is the budget's probe. */
  private async waitUntilClear(ds: string, ctx: Ctx): Promise<boolean | 'aborted'> {
    for (;;) {
      if (this.stopping) return 'aborted';
      const probe = await this.budgetPark.pass(this.stopAc.signal);
      if (this.stopping) {
        if (probe) this.budgetPark.probeDone(false);
        return 'aborted';
      }
      const dsPark = this.dsParks.get(ds);
      if (!ctx.ownsDsPark && dsPark?.parked) {
        if (probe) this.budgetPark.probeDone(false);
        await this.notifier.wait(this.o.clock, 60_000);
        continue;
      }
      if (this.o.clock.now() < this.pausedUntil) {
        if (probe) this.budgetPark.probeDone(false);
        await this.sleepUntil(this.pausedUntil);
        continue;
      }
      return probe;
    }
  }

  private async sleepUntil(t: number): Promise<void> {
    while (!this.stopping) {
      const ms = t - this.o.clock.now();
      if (ms <= 0) return;
      await this.notifier.wait(this.o.clock, ms);
    }
  }

  /** One request; null when the budget got parked (or the sender stopped) while this one waited for its slot. */
  private async request(part: Part, isProbe: boolean): Promise<SendOutcome | null> {
    await this.inFlight.acquire();
    try {
      await this.o.limiter.acquire();
      if (this.stopping || (this.budgetPark.parked && !isProbe)) return null;
      const started = performance.now();
      const outcome = await this.o.client.post(part.ds, part.body, part.encoding);
      const status = outcome.kind === 'response' ? outcome.status : 'error';
      this.o.hooks.onRequest(part.ds, status, (performance.now() - started) / 1000, part.body.length);
      return outcome;
    } finally {
      this.inFlight.release();
    }
  }

  private growLearned(ds: string): void {
    const cur = this.learned.get(ds);
    if (cur === undefined) return;
    const next = cur * LEARNED_RECOVERY;
    if (next >= this.o.maxBytes) this.learned.delete(ds);
    else this.learned.set(ds, next);
  }

  private async raw(part: Part): Promise<Buffer> {
    return part.encoding ? decodeBody(part.encoding, part.body) : part.body;
  }

  /** Halves at the line boundary nearest the middle. */
  private async split(part: Part, raw: Buffer): Promise<[Part, Part]> {
    const mid = raw.length >> 1;
    let cut = raw.lastIndexOf(10, mid - 1) + 1;
    if (cut <= 0 || cut >= raw.length) cut = raw.indexOf(10, mid) + 1;
    const left = raw.subarray(0, cut);
    const right = raw.subarray(cut);
    const leftLines = countLines(left);
    const [lb, rb] = await Promise.all([this.o.codec.compress(left), this.o.codec.compress(right)]);
    const encoding = this.o.codec.contentEncoding;
    return [
      { ds: part.ds, body: lb, encoding, rawLen: left.length, lines: leftLines, lineStart: part.lineStart },
      { ds: part.ds, body: rb, encoding, rawLen: right.length, lines: part.lines - leftLines, lineStart: part.lineStart + leftLines },
    ];
  }
}

function isBad(v: Final): boolean {
  return v.kind === 'split' && v.reason === '400';
}

export function countLines(buf: Buffer): number {
  let n = 0;
  let pos = buf.indexOf(10);
  while (pos !== -1) {
    n++;
    pos = buf.indexOf(10, pos + 1);
  }
  return n;
}
