// The request budget shared by every agent with the same budget_id through
// Redis (README "How each server answer is handled"), with a local fallback so that losing Redis never
// stops shipping.
//
// States: shared (a RedisBudget is joined) or fallback (the local limiter at
// fallback_requests_per_second). Shared -> fallback on the first failure of
// the budget's connections or scripts, logged once per outage and reported
// through onFallback(true) (the spoolship_limiter_fallback gauge); /readyz is
// not touched. While in fallback, one join attempt runs every rejoinEveryMs;
// when one succeeds, new requests use the shared budget again and
// onFallback(false) is reported. Requests already waiting on the fallback
// limiter take a shared slot instead once their fallback turn comes. Callers already sleeping on
// a reserved shared slot keep it when Redis is lost, so the fallback starts
// only after this agent's last reserved slot: the two never overlap.
//
// Rejoining without a burst: after a Redis restart every agent is on its
// fallback, and they rejoin one by one over a rejoin period. An agent back on
// the shared budget would take all of it while the others still send at
// their fallback rate. So an agent that rejoins from the fallback and finds
// the budget key gone (Redis came back empty) creates it with its first slot
// one rejoin period plus a join timeout ahead: by then every agent has
// rejoined (each tries once per period), and until then only the agents
// still on their fallback send (N x fallback_requests_per_second, which
// the operator keeps under the limit). A key that still exists (only this
// agent lost Redis) has no quiet start.
import { performance } from 'node:perf_hooks';
import { redactUrlPassword } from '../config/index.js';
import type { Logger } from '../log.js';
import { createLocalLimiter, type RateLimiter } from './limiter.js';
import { BrokenBudgetError, joinRedisBudget, type RedisBudget } from './redis-budget.js';

export interface RedisLimiterOptions {
  redisUrl: string;
  /** Extra CA (PEM) to trust for rediss:// (limits.redis_ca_file). */
  redisCa?: Buffer;
  budgetId: string;
  requestsPerSecond: number;
  fallbackRequestsPerSecond: number;
  log: Logger;
  onFallback: (active: boolean) => void;
  /** Connect and register within this, or count Redis as unreachable. */
  joinTimeoutMs?: number;
  /** A command unanswered this long counts as Redis lost. */
  commandTimeoutMs?: number;
  /** While in fallback, try to rejoin this often. */
  rejoinEveryMs?: number;
}

export const DEFAULT_JOIN_TIMEOUT_MS = 2000;
export const DEFAULT_COMMAND_TIMEOUT_MS = 2000;
export const DEFAULT_REJOIN_EVERY_MS = 1000;
/**
 * Request starts are spaced (1000 / requests_per_second) * this apart across
 * the fleet. Wider than the local limiter's 2 %: the spacing is planned in
 * Redis, but each request reaches the API after its own agent's timers,
 * event loop, connection set-up and network, which differ between agents and
 * hosts, and the API counts arrivals. 10 % leaves 100 ms of such jitter at
 * 100 req/s before a sliding second at the server could count a 101st
 * request (measured: 5 % still let 101-105 through on a loaded 2-core host).
 * When the limit binds, batches grow instead, so bytes per second do not drop.
 */
export const SHARED_SPACING_MARGIN = 1.1;
/** The Redis key of a budget (braces: a Redis Cluster hash tag, one key anyway). */
export function budgetKey(budgetId: string): string {
  return `spoolship:budget:{${budgetId}}`;
}

export class RedisLimiter implements RateLimiter {
  private budget: RedisBudget | null = null;
  private readonly fallback: RateLimiter;
  private inFallback = false;
  /** performance.now() before which the fallback grants nothing (the lost budget's last slot). */
  private fallbackNotBeforeMs = 0;
  private rejoinTimer: NodeJS.Timeout | null = null;
  private joining: Promise<void> | null = null;
  /** Budgets being closed after a loss; awaited by close(). */
  private readonly retiring = new Set<Promise<void>>();
  private closed = false;
  private closing: Promise<void> | null = null;

  private readonly joinTimeoutMs: number;
  private readonly rejoinEveryMs: number;

  private constructor(private readonly o: RedisLimiterOptions) {
    this.fallback = createLocalLimiter(o.fallbackRequestsPerSecond);
    this.joinTimeoutMs = o.joinTimeoutMs ?? DEFAULT_JOIN_TIMEOUT_MS;
    this.rejoinEveryMs = o.rejoinEveryMs ?? DEFAULT_REJOIN_EVERY_MS;
  }

  /** Joins the shared budget, or starts on the fallback when Redis cannot be reached (never throws for that). */
  static async start(o: RedisLimiterOptions): Promise<RedisLimiter> {
    const limiter = new RedisLimiter(o);
    await limiter.join();
    if (!limiter.budget) limiter.scheduleRejoin();
    return limiter;
  }

  get usingFallback(): boolean {
    return this.inFallback;
  }

  async acquire(): Promise<void> {
    for (;;) {
      const budget = this.budget;
      if (!budget) {
        const ms = this.fallbackNotBeforeMs - performance.now();
        if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
        await this.fallback.acquire();
        // Rejoined while this request waited on the fallback: take a shared
        // slot instead. Requests still queued on the fallback would otherwise
        // go at the fallback rate on top of the shared budget (with
        // max_in_flight: auto that can be dozens per agent: 429s).
        if (this.budget && !this.closed) continue;
        return;
      }
      try {
        await budget.acquire();
        return;
      } catch (err) {
        // Loop once more: the budget is now null, so this goes to the fallback.
        this.onLost(budget, err);
      }
    }
  }

  pause(ms: number): void {
    // Best effort: a lost budget is noticed (and logged) by the next acquire.
    void this.budget?.pause(ms);
  }

  /** The Redis connections are closed either way (the budget's slots expire by themselves). */
  destroy(): Promise<void> {
    return this.close();
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      if (this.rejoinTimer) clearTimeout(this.rejoinTimer);
      this.rejoinTimer = null;
      await this.joining;
      const budget = this.budget;
      this.budget = null;
      await budget?.close();
      await Promise.all(this.retiring);
      await this.fallback.close();
    })();
    return this.closing;
  }

  private async join(): Promise<void> {
    const o = this.o;
    let budget: RedisBudget | null = null;
    try {
      budget = await joinRedisBudget({
        // Flips to the fallback at once, even while nothing is being sent.
        onLost: (err) => {
          if (budget) this.onLost(budget, err);
        },
        url: o.redisUrl,
        ca: o.redisCa,
        key: budgetKey(o.budgetId),
        spacingMs: sharedSpacingMs(o.requestsPerSecond),
        quietIfNewMs: this.inFallback ? this.rejoinEveryMs + this.joinTimeoutMs : 0,
        joinTimeoutMs: this.joinTimeoutMs,
        commandTimeoutMs: o.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
      });
    } catch (err) {
      this.enterFallback(err);
      return;
    }
    if (this.closed || budget.lostError) {
      // Lost between its join and here: onLost had no budget to retire yet.
      if (budget.lostError) this.enterFallback(budget.lostError);
      await budget.close();
      return;
    }
    this.budget = budget;
    const where = { redis: redactUrlPassword(o.redisUrl), budget_id: o.budgetId, requests_per_second: o.requestsPerSecond };
    const rejoined = this.inFallback;
    this.inFallback = false;
    // Also on a first join: a limiter rebuilt by a config reload must clear the gauge its predecessor set.
    o.onFallback(false);
    if (budget.repairedAtJoin) {
      o.log.warn({ event: 'budget_key_repaired', ...where }, 'the shared budget key held nonsense or a slot absurdly far away; reset it (check what else writes to this Redis key)');
    }
    o.log.info({ event: rejoined ? 'budget_rejoined' : 'budget_joined', ...where }, rejoined ? 'Redis reachable again: back on the shared request budget' : 'joined the shared request budget (Redis)');
  }

  private onLost(budget: RedisBudget, err: unknown): void {
    if (this.budget !== budget) return;
    this.budget = null;
    this.fallbackNotBeforeMs = budget.lastSlotMs;
    const done = budget.close().finally(() => this.retiring.delete(done));
    this.retiring.add(done);
    this.enterFallback(err);
    this.scheduleRejoin();
  }

  private enterFallback(err: unknown): void {
    if (this.inFallback || this.closed) return;
    this.inFallback = true;
    this.o.onFallback(true);
    this.o.log.warn(
      {
        event: err instanceof BrokenBudgetError ? 'budget_broken' : 'budget_unreachable',
        redis: redactUrlPassword(this.o.redisUrl),
        budget_id: this.o.budgetId,
        fallback_requests_per_second: this.o.fallbackRequestsPerSecond,
        err: err instanceof Error ? err.message : String(err),
      },
      'shared request budget unreachable (Redis): shipping on the local fallback budget; rejoining when Redis answers',
    );
  }

  private scheduleRejoin(): void {
    if (this.closed || this.rejoinTimer || this.joining) return;
    this.rejoinTimer = setTimeout(() => {
      this.rejoinTimer = null;
      this.joining = this.join().finally(() => {
        this.joining = null;
        if (!this.budget) this.scheduleRejoin();
      });
    }, this.rejoinEveryMs);
  }
}

export function sharedSpacingMs(requestsPerSecond: number): number {
  return (1000 / requestsPerSecond) * SHARED_SPACING_MARGIN;
}

