// The in-flight bound: how many requests of this agent are on their way at
// once (max_in_flight, or where auto stands: concurrency.ts; 1 from a 413
// until a success), with how many compressed bytes (max_in_flight_bytes:
// in-flight-bytes.ts), and how many of them hold a reserved slot of the rate
// budget. Every request takes its turn through run(); the answer times feed
// auto concurrency and a graceful stop (longestRecentAnswerMs).
import type { Clock } from '../util/clock.js';
import { DEFAULTS } from '../config/defaults.js';
import { ConcurrencyLimit, type AnswerKind } from './concurrency.js';
import type { SendOutcome } from './http-client.js';
import { inFlightBytesBound } from './in-flight-bytes.js';
import { ByteBudget, Semaphore, type RateLimiter } from './limiter.js';
import type { SenderHooks, SenderOptions } from './types.js';

/** Answers whose times a graceful stop looks at (longestRecentAnswerMs). */
export const ANSWER_WINDOW = 16;

/**
 * Requests of one agent that may hold a reserved slot of the rate budget at
 * once (the rest wait their turn before reserving). With a shared budget in
 * Redis, slots are handed out in the order they are reserved: an agent with
 * more requests waiting got a larger share, and 20 agents growing to their
 * cap queued ~13 s of slots, past the 10 s after which a budget key counts
 * as broken, so they fell back to their local budgets and drew 429s (bench
 * fleet). The same few per agent keep the shared queue short (20 agents: ~1.6
 * s at 100 req/s) and the shares equal; 8 slots ahead keep one agent's
 * requests flowing at the whole budget.
 */
export const SLOTS_RESERVED_AHEAD = 8;

/**
 * Where max_in_flight: auto starts (slow start doubles it per round trip).
 * Requests are few and large (10 MB batches): from 2, a 1 GB backlog spent
 * most of its time in slow start when answers take 1-2 s (x0.59 of the 0 ms
 * speed at 1 s, against x0.84 from 16; bench latency-sweep). From 16 the
 * first round trip still sent fewer than the default max_in_flight_bytes
 * lets go (48 MiB is ~29 bodies of a 10 MB batch at zstd 3), and at 2 s
 * answers that round trip is a quarter of a 1 GB backlog: 117-123 MB/s from
 * 16, 128-132 from 32 (bench/README.md finding 30). Memory stays bounded by
 * max_in_flight_bytes whatever the limit; a fast server's rising answer
 * times bring it down within a few round trips.
 *
 * With the rate budget known, auto starts at one second of it (100 with the
 * platform's 100 requests/s), at least this: on 16 cores, where a 3 GB
 * backlog is ~300 requests and ~3 s of the budget, the doublings from 32 took
 * three 2 s round trips (x0.62 of the 0 ms speed at 2 s answers). No more than
 * a second of the budget ever starts within a second, so the first round trip
 * sends what the budget lets go and no more.
 */
export const AUTO_INITIAL_IN_FLIGHT = 32;

/** Where auto starts: one second of the rate budget, at least AUTO_INITIAL_IN_FLIGHT, within the cap. */
export function autoInitial(cap: number, requestsPerSecond?: number): number {
  return Math.min(cap, Math.max(AUTO_INITIAL_IN_FLIGHT, requestsPerSecond ?? 0));
}
/** limits.max_in_flight_cap's default, for senders built without a config (tests, tools). */
export const DEFAULT_IN_FLIGHT_CAP = DEFAULTS.limits.max_in_flight_cap;

export interface InFlightOptions extends Pick<SenderOptions, 'maxInFlight' | 'maxInFlightCap' | 'requestsPerSecond' | 'maxInFlightBytes' | 'maxConnections'> {
  clock: Clock;
  limiter: RateLimiter;
  hooks: Pick<SenderHooks, 'onInFlightLimit' | 'onInFlightBytes'>;
}

export class InFlightBound {
  private readonly inFlight: Semaphore;
  private readonly inFlightBytes: ByteBudget;
  /** Tells limits.max_in_flight_bytes: auto the size of each body taking its turn. */
  private readonly observeBody: (bytes: number) => void;
  private readonly concurrency: ConcurrencyLimit;
  /** Requests past the byte budget (waiting for a rate slot, or on the wire). */
  private holding = 0;
  /** The last ANSWER_WINDOW answer times (ms), oldest first. */
  private readonly answerTimes: number[] = [];
  /** Requests of this agent holding or waiting for a reserved slot of the rate budget. */
  private readonly slotQueue = new Semaphore(SLOTS_RESERVED_AHEAD);
  /** After a 413, one request at a time until a success (the limit is being learned). */
  private readonly single = new Semaphore(1);
  private narrowed = false;

  constructor(private readonly o: InFlightOptions) {
    const auto = o.maxInFlight === 'auto';
    const cap = Math.max(1, Math.min(o.maxInFlightCap ?? DEFAULT_IN_FLIGHT_CAP, o.maxConnections ?? Infinity));
    const initial = auto ? autoInitial(cap, o.requestsPerSecond) : (o.maxInFlight as number);
    this.inFlight = new Semaphore(initial);
    const bytesBound = inFlightBytesBound(o.maxInFlightBytes, auto ? cap : initial);
    this.inFlightBytes = new ByteBudget(bytesBound.bound);
    this.observeBody = bytesBound.observe;
    this.concurrency = new ConcurrencyLimit(o.clock, {
      auto,
      initial,
      cap: auto ? cap : initial,
      onChange: (n) => {
        this.inFlight.setMax(n);
        if (!this.narrowed) o.hooks.onInFlightLimit?.(n);
      },
    });
    // The gauge shows the limit from the start, also one that never moves.
    o.hooks.onInFlightLimit?.(initial);
  }

  /** One request at a time from a 413 until a success; spoolship_in_flight_limit shows it. */
  narrow(on: boolean): void {
    if (this.narrowed === on) return;
    this.narrowed = on;
    this.o.hooks.onInFlightLimit?.(on ? 1 : this.concurrency.limit);
  }

  /**
   * Send one request in its turn. 'over_learned' when `cutFirst()`, asked
   * once the request holds its place in flight and again once it holds its
   * rate slot, says the piece must be cut
   * instead (a 413 lowered the learned limit meanwhile); null when
   * `mayGo()`, asked once it holds a rate slot, says no (the budget got paused or
   * parked, or the sender stopped).
   */
  async run(bytes: number, cutFirst: () => boolean, mayGo: () => boolean, send: () => Promise<SendOutcome>): Promise<SendOutcome | null | 'over_learned'> {
    await this.inFlight.acquire();
    const narrow = this.narrowed;
    if (narrow) await this.single.acquire();
    if (cutFirst()) {
      if (narrow) this.single.release();
      this.inFlight.release();
      return 'over_learned';
    }
    this.observeBody(bytes);
    await this.inFlightBytes.acquire(bytes);
    this.o.hooks.onInFlightBytes?.(this.inFlightBytes.inUse);
    // Counted once past the byte budget: a limit that only waits on bytes is
    // not reached and does not grow (memory binds, not concurrency). Waiting
    // for the rate budget counts: with a shared budget each agent's share of
    // slots follows its concurrency, so every agent grows alike.
    this.holding++;
    this.concurrency.onStart(this.holding);
    try {
      await this.slotQueue.acquire();
      try {
        await this.o.limiter.acquire();
      } finally {
        this.slotQueue.release();
      }
      if (!mayGo()) return null;
      // A 413 may have lowered the learned limit while this one waited for its slot.
      if (cutFirst()) return 'over_learned';
      const startedAt = this.o.clock.now();
      const outcome = await send();
      const answerMs = this.o.clock.now() - startedAt;
      this.concurrency.onAnswer(answerMs, answerKind(outcome));
      this.answerTimes.push(answerMs);
      if (this.answerTimes.length > ANSWER_WINDOW) this.answerTimes.shift();
      return outcome;
    } finally {
      this.holding--;
      this.inFlightBytes.release(bytes);
      this.o.hooks.onInFlightBytes?.(this.inFlightBytes.inUse);
      if (narrow) this.single.release();
      this.inFlight.release();
    }
  }

  /**
   * The longest of the last ANSWER_WINDOW answer times (ms; 0 before any): a
   * graceful stop starts no request this close to the moment it stops
   * waiting for answers (agent/stop.ts), since cutting it then would make
   * its outcome unknown and its batch a duplicate at the next start.
   */
  get longestRecentAnswerMs(): number {
    return this.answerTimes.length === 0 ? 0 : Math.max(...this.answerTimes);
  }

  get requestsInFlight(): number {
    return this.inFlight.inUse;
  }

  /** Requests waiting for room under max_in_flight_bytes: while there are any, the bytes bind, not the number of requests. */
  get waitingForBytes(): number {
    return this.inFlightBytes.waiting;
  }

  /** Requests allowed in flight now (max_in_flight, or where auto stands; 1 from a 413 until a success). */
  get concurrencyLimit(): number {
    return this.narrowed ? 1 : this.concurrency.limit;
  }
}

/** What an answer says about congestion: 429, 503 and timeouts halve the concurrency. */
function answerKind(outcome: SendOutcome): AnswerKind {
  if (outcome.kind === 'error') return outcome.timeout ? 'congested' : 'other';
  if (outcome.status === 429 || outcome.status === 503) return 'congested';
  return outcome.status >= 200 && outcome.status < 300 ? 'ok' : 'other';
}
