// The sender's shapes: the batches it delivers and their pieces, the hooks
// through which it tells the agent what happened, its options, and what one
// delivery knows while it runs. Types only: every module of the sender may
// import them without a cycle.
import type { Codec } from '../codec/index.js';
import type { Body } from './body.js';
import type { BudgetMemory } from './budget-memory.js';
import type { Clock } from '../util/clock.js';
import type { EventsClient, SendOutcome } from './http-client.js';
import type { RateLimiter } from './limiter.js';
import type { AckOddity, BackoffOptions, RetryReason, Verdict } from './retry-policy.js';

export interface RootBatch {
  id: number;
  ds: string;
  /** Compressed body: the exact bytes of every attempt (in memory, or spilled: body.ts). */
  body: Body;
  /** Content-Encoding of `body` (a queued batch keeps the codec it was compressed with). */
  encoding: string | null;
  rawLen: number;
  lines: number;
}

/** A piece of a root batch: the whole of it, or a half of a half... */
export interface Part {
  ds: string;
  body: Body;
  encoding: string | null;
  rawLen: number;
  lines: number;
  /** Index of the part's first line among the root batch's lines. */
  lineStart: number;
}

export interface SenderHooks {
  onRequest(ds: string, status: number | 'error', seconds: number, wireBytes: number, outcome: SendOutcome): void;
  /** `cause`: what failed, kept for the log (`ECONNREFUSED: connect ECONNREFUSED 10.0.0.1:443`, a certificate error by name, `HTTP 503`). */
  onRetry(reason: RetryReason, ds: string, cause?: string): void;
  onAck(ds: string, lines: number, rawBytes: number, quarantinedRows: number): void;
  /** `unconfirmed`: a budget park on a 403 that a request of another Data Source under way may yet show to be one Data Source's refusal. */
  onParkChange(scope: 'budget' | { ds: string }, reason: string | null, previous: string | null, detail: string | null, unconfirmed?: boolean): void;
  /** A 403 refused `ds` while the budget is parked (its reason unchanged: no onParkChange): `Sender.refusedDataSources` grew (the reader's room, pipeline/parked-hold.ts). */
  onRefused?(ds: string): void;
  /**
   * Store the parts' lines as dead letters (durably) before the batch counts
   * as done: one write (one log event) for all of them. `operator`: released
   * by `spoolship queue dead-letter` (status: the batch's last answer, null
   * when none).
   */
  deadLetterLines(root: RootBatch, parts: ReadonlyArray<{ part: Part; raw: Buffer }>, reason: 'rejected' | 'line_too_long' | 'materialized_view_error' | 'operator', status: number | null): Promise<void>;
  /** A batch's 400 episode: raised once when its bisection starts and once when the delivery ends; never per request of it. */
  onBisection?(event: BisectionEvent): void;
  /** The budget's 413 episode: raised once when a 413 first cuts a batch and once when every batch it concerns is resolved; never per request of it. */
  onSplit?(event: SplitEvent): void;
  /** Something worth a WARN once: an ignored Retry-After, an odd acknowledgement. Called per answer; the hook de-duplicates. */
  onOddAnswer?(what: AckOddity | 'ignored_wait', ds: string, detail: string | null): void;
  /** An acknowledgement's row counts add up to the lines sent (a streak of counts_mismatch ends). */
  onCountsAddUp?(ds: string): void;
  /** The learned body size limit changed (max_bytes when none is learned). */
  onLearnedLimit?(bytes: number): void;
  /** The concurrency limit changed (spoolship_in_flight_limit). */
  onInFlightLimit?(limit: number): void;
  /** Compressed bytes held against max_in_flight_bytes changed (spoolship_in_flight_bytes). */
  onInFlightBytes?(bytes: number): void;
}

/**
 * A batch's 400 episode, for the log: 'start' at the 400 that starts its
 * bisection, 'end' when that delivery ends (every line acknowledged or
 * dead-lettered: 'done'; the refusal is the request's own: 'request_level';
 * or stopped). `requests`: those of the episode, the first 400 included.
 */
export type BisectionEvent =
  | { phase: 'start'; batchId: number; ds: string; lines: number; rawBytes: number }
  | { phase: 'end'; batchId: number; ds: string; outcome: DeliveryResult | 'request_level'; requests: number; linesAcked: number; linesDeadLettered: number };

/**
 * The budget's 413 episode, for the log (split-episode.ts): 'start' at the
 * first 413 that cuts a batch (the refused piece, and the learned limit it
 * taught), 'end' when every batch of the episode is resolved ('done'), or
 * how the last unresolved one ended. `answers413`: every 413 of the episode,
 * the first included; lines: those of the episode's batches.
 */
export type SplitEvent =
  | { phase: 'start'; batchId: number; ds: string; lines: number; rawBytes: number; learnedBytes: number }
  | { phase: 'end'; outcome: DeliveryResult; batches: number; answers413: number; linesAcked: number; linesDeadLettered: number; learnedBytes: number };

export interface SenderOptions {
  client: Pick<EventsClient, 'post'>;
  codec: Codec;
  limiter: RateLimiter;
  clock: Clock;
  random: () => number;
  backoff: BackoffOptions;
  http2: boolean;
  /** Requests a 400 bisection may spend with nothing accepted (PROBE_BUDGET when absent). */
  probeBudget?: number;
  /** api.wait (a 202 under wait=true is worth a WARN); true when absent. */
  wait?: boolean;
  /** A fixed number of requests in flight, or 'auto' (concurrency.ts). */
  maxInFlight: number | 'auto';
  /** The most 'auto' may reach (max_in_flight_cap; also bounded by maxConnections). */
  maxInFlightCap?: number;
  /** limits.requests_per_second: auto starts with one second of it in flight (in-flight.ts). */
  requestsPerSecond?: number;
  /** Compressed bytes in flight together (max_in_flight_bytes); one request always may go. */
  maxInFlightBytes?: number | 'auto';
  maxConnections?: number;
  maxBytes: number;
  hooks: SenderHooks;
  /** The Retry-After pause and the 413 learned limit, kept by the process across a reload (budget-memory.ts). */
  memory?: BudgetMemory;
  /** The state cannot record acknowledgements now (a full or read-only state_dir): no request starts (clearance.ts); Sender.stateChanged() when it changes. */
  stateHeld?: () => boolean;
}

/**
 * done: acknowledged or dead-lettered; aborted: the sender is stopping;
 * deferred: not deliverable now (quick attempts used up, or parked) and the
 * caller said it can keep the batch elsewhere (the disk queue).
 */
export type DeliveryResult = 'done' | 'aborted' | 'deferred';

export interface DeliverOptions {
  /** Asked only when the batch would be deferred now: may the caller take it back? (A yes may hold room for it: pipeline/queue-moves.ts.) */
  canDefer?: () => boolean;
  /** Failed attempts before a batch is deferred. */
  deferAfter?: number;
  /**
   * While the batch's Data Source is parked and its probe is not due, return
   * 'deferred' instead of waiting (the queue replayer: the batch stays
   * queued and the replayer's loops go on with other Data Sources). Only a
   * whole batch goes back; a batch already being cut waits as before.
   */
  leaveWhenDsParked?: boolean;
  /** Ends this delivery's waits ('aborted'), as close() does for every delivery: the caller is being destroyed. A request on the wire is answered (or times out) first. */
  signal?: AbortSignal;
  /**
   * No attempt of this batch was ever made (not a queued or re-formed one):
   * it may be cut to the learned 413 limit before it is sent, since nothing
   * of it can be stored yet.
   */
  neverSent?: boolean;
  /**
   * The delivery ends unresolved ('aborted' or 'deferred') after pieces of
   * the batch were acknowledged: `pieces` are what is left of it (the lines
   * neither acknowledged nor dead-lettered). A caller that keeps these
   * instead of the whole batch sends no acknowledged line again; without it
   * the whole batch comes back (README "Delivery guarantee": a graceful stop creates no
   * duplicates).
   */
  onUnresolved?: (pieces: Part[]) => void;
}
/** A verdict the delivery carries out itself (not a wait): ack, split or dead-letter, with the answer's status. */
export type Final = Exclude<Verdict, { kind: 'retry' } | { kind: 'park' }> & { status: number };


/** What the sender knows of one batch's attempts (for `spoolship queue list`); kept until the batch is done. */
export interface BatchHistory {
  attempts: number;
  /** HTTP status of the last answer; null for a network error or before any answer. */
  lastStatus: number | null;
  lastError: string | null;
}

/** A batch being delivered now: what `queue list` shows and `queue dead-letter` may release. */
export interface HeldBatch {
  root: RootBatch;
  /** Waiting for a park (of its Data Source or of the budget) to end. */
  parked: boolean;
  /** When its delivery started (clock ms). */
  since: number;
  history: BatchHistory;
}

/** What one delivery knows about its batch while it is being resolved. */
export interface DeliveryCtx {
  root: RootBatch;
  opts: DeliverOptions;
  /** A 400 is being bisected. */
  bisecting: boolean;
  /** Requests spent bisecting. */
  probes: number;
  /** Lines acknowledged and dead-lettered so far (the bisection's end event). */
  linesAcked: number;
  linesDeadLettered: number;
  /** Some part of the batch was acknowledged: the request itself is fine. */
  accepted: boolean;
  /** The sender's count of wakes and unparks when the last request left (a refusal answering an older state parks nothing). */
  sentEpoch?: number;
  /** Quarters of the batch from which a single line was rejected (400). */
  rejectedQuarters: Set<number>;
  /**
   * Isolated bad lines, dead-lettered once the batch is known not to be a
   * request-level problem (a bad name would otherwise dead-letter good lines).
   */
  pendingRejects: Array<{ part: Part; raw: Buffer }>;
  /** This delivery holds its Data Source park's probe. */
  holdsDsProbe: boolean;
  /** An attempt may have stored something (5xx, reset, timeout): never cut the batch again. */
  unknownOutcome: boolean;
  /** Ends this delivery's waits: the sender stops, or an operator released the batch. */
  ac: AbortController;
  /** `spoolship queue dead-letter` moves what is left of the batch to the dead-letter store. */
  released: boolean;
  /** Lines dead-lettered because of the release. */
  releasedLines: number;
  /** How the delivery ended; null while it runs. */
  result: DeliveryResult | null;
  /** When the delivery started (clock ms). */
  since: number;
}
