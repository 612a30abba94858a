// The one place where an answer becomes a decision (README "How each server
// answer is handled").
//
// | answer                         | verdict                                       |
// |--------------------------------|-----------------------------------------------|
// | 2xx, body empty or one JSON object (first 64 KiB) | ack (quarantined_rows counted; empty body or a 202 under wait=true: WARN once) |
// | 2xx, any other body (an HTML page) | park unexpected_response (base_url reaches some other server) |
// | 3xx                            | park unexpected_response: never followed (the token must not travel) |
// | 400                            | split (bisect; the sender isolates bad lines) |
// | 401, 403                       | park token_rejected                           |
// | 404                            | park workspace_not_found                      |
// | 413                            | split (halves; lower the learned size)        |
// | 422                            | dead_letter materialized_view_error           |
// | 429                            | retry after Retry-After / X-RateLimit-Reset / backoff, pause the budget |
// | 408, 5xx, timeouts, resets     | retry after full-jitter backoff; a Retry-After on a 408/5xx wins and pauses the budget |
// | HTTP/2 GOAWAY                  | retry at once on a new connection             |
// | any other 4xx (405, 410, ...)  | park unexpected_response (keeps the data)     |
// | any other status (1xx, 6xx...) | retry after backoff (keeps the data; logged)  |

import type { SendOutcome } from './http-client.js';
import { printable } from '../util/printable.js';

export type RetryReason = '429' | '5xx' | 'timeout' | 'network' | 'goaway' | '413' | '400';
export type BudgetParkReason = 'token_rejected' | 'workspace_not_found' | 'unexpected_response';
export type ParkReason = BudgetParkReason | 'bad_request' | 'disk_full' | 'state_dir_unwritable';

/** Something odd about an acknowledgement, worth one WARN (not per request). */
export type AckOddity = 'empty_body' | 'accepted_under_wait' | 'counts_mismatch';

export type Verdict =
  | { kind: 'ack'; quarantinedRows: number; oddity: AckOddity | null; rows?: RowCounts }
  | {
      kind: 'retry';
      afterMs: number;
      reason: RetryReason;
      pauseBudget: boolean;
      /** A Retry-After / X-RateLimit-Reset that was ignored (absurd, negative, past, unparseable). */
      ignoredWait: string | null;
    }
  | { kind: 'split'; reason: '413' | '400' }
  | { kind: 'park'; reason: BudgetParkReason; detail: string | null }
  | { kind: 'dead_letter'; reason: 'materialized_view_error' };

/** The longest wait a server may ask for (15 min); anything longer is taken for a broken header. */
export const MAX_SERVER_WAIT_MS = 900_000;
/** An X-RateLimit-Reset above this is an epoch time in seconds, not a delta. */
const EPOCH_SECONDS_FLOOR = 1e9;

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  multiplier: number;
}

/** Full jitter: a uniform wait in [0, min(max, initial * multiplier^attempt)]. */
export function backoffMs(attempt: number, o: BackoffOptions, random: () => number): number {
  const ceiling = Math.min(o.maxMs, o.initialMs * o.multiplier ** Math.max(0, attempt));
  return Math.floor(random() * ceiling);
}

/**
 * Retry-After: delta-seconds or an HTTP date. Returns ms from `now`; null when
 * absent; 'invalid' when present but unusable: outside 0-900 s, negative, in
 * the past, or unparseable. (`Retry-After: -5` once parsed as a date in 2001
 * and gave a request storm; `2147483648` paused the budget for decades.)
 */
export function parseRetryAfter(value: string | null, now: number): number | null | 'invalid' {
  if (value === null || value.trim() === '') return null;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return bounded(Math.ceil(Number(v) * 1000));
  // An HTTP date names its day or month: a bare number or a sign is not one.
  if (!/[A-Za-z]{3}/.test(v)) return 'invalid';
  const at = Date.parse(v);
  return Number.isNaN(at) ? 'invalid' : bounded(at - now);
}

/** X-RateLimit-Reset: seconds until the window resets, or an epoch time in seconds above 10^9. */
export function parseRateLimitReset(value: string | null, now: number): number | null | 'invalid' {
  if (value === null || value.trim() === '') return null;
  const v = value.trim();
  if (!/^\d+(\.\d+)?$/.test(v)) return 'invalid';
  const n = Number(v);
  return bounded(n > EPOCH_SECONDS_FLOOR ? Math.ceil(n * 1000 - now) : Math.ceil(n * 1000));
}

function bounded(ms: number): number | 'invalid' {
  return Number.isFinite(ms) && ms >= 0 && ms <= MAX_SERVER_WAIT_MS ? ms : 'invalid';
}

export interface ClassifyContext {
  /** Consecutive failed attempts of this batch so far (0 on the first answer). */
  attempt: number;
  /** True when the previous failure of this batch was also treated as a GOAWAY. */
  afterGoaway: boolean;
  http2: boolean;
  /** api.wait: a 202 while waiting is odd (WARN once), still an acknowledgement. */
  wait: boolean;
  now: number;
  backoff: BackoffOptions;
  random: () => number;
}

/** At most this much of an answer's body goes into a park's detail (logs, status). */
const EXCERPT_CHARS = 200;

/** `: <the answer's first 200 characters, control characters escaped>`, or nothing for an empty body. */
function answerExcerpt(body: string): string {
  const text = body.trim();
  if (text === '') return '';
  return `: ${printable(text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}...` : text)}`;
}

export function classify(outcome: SendOutcome, ctx: ClassifyContext): Verdict {
  const backoff = () => backoffMs(ctx.attempt, ctx.backoff, ctx.random);
  const retry = (reason: RetryReason, afterMs = backoff()): Verdict => ({ kind: 'retry', afterMs, reason, pauseBudget: false, ignoredWait: null });
  // A 408 or 5xx: backoff, unless the server said how long to wait ("Retry-After
  // always wins"); then, as for a 429, the whole budget waits that long.
  const serverBusy = (reason: RetryReason): Verdict => {
    const ra = outcome.kind === 'response' ? parseRetryAfter(outcome.retryAfter, ctx.now) : null;
    if (typeof ra === 'number') return { kind: 'retry', afterMs: ra, reason, pauseBudget: true, ignoredWait: null };
    const ignoredWait = ra === 'invalid' && outcome.kind === 'response' ? `Retry-After: ${outcome.retryAfter}` : null;
    return { kind: 'retry', afterMs: backoff(), reason, pauseBudget: false, ignoredWait };
  };
  if (outcome.kind === 'error') {
    if (outcome.timeout) return retry('timeout');
    // undici reports an HTTP/2 GOAWAY as UND_ERR_SOCKET (only the message
    // says GOAWAY, and we never branch on messages): on HTTP/2 the first
    // socket error of a streak is resent at once on a new connection; a
    // second one in a row backs off like any reset.
    if (ctx.http2 && outcome.code === 'UND_ERR_SOCKET' && !ctx.afterGoaway) return retry('goaway', 0);
    return retry('network');
  }
  const s = outcome.status;
  if (s >= 200 && s < 300) return acknowledgement(outcome, ctx.wait);
  if (s >= 300 && s < 400) {
    // Following a redirect would send the token to another host.
    return { kind: 'park', reason: 'unexpected_response', detail: `HTTP ${s} to ${outcome.location ?? '(no Location)'} (not followed)` };
  }
  switch (s) {
    case 400:
      return { kind: 'split', reason: '400' };
    case 401:
    case 403:
      // The answer's own words (bounded, escaped) tell a bad token from a
      // Data Source the token may not create.
      return { kind: 'park', reason: 'token_rejected', detail: `HTTP ${s}${answerExcerpt(outcome.body)}` };
    case 404:
      return { kind: 'park', reason: 'workspace_not_found', detail: 'HTTP 404' };
    case 413:
      return { kind: 'split', reason: '413' };
    case 422:
      return { kind: 'dead_letter', reason: 'materialized_view_error' };
    case 429: {
      // Retry-After first, then X-RateLimit-Reset; an unusable one is ignored
      // (the caller WARNs once per streak) and backoff applies.
      const ra = parseRetryAfter(outcome.retryAfter, ctx.now);
      const reset = parseRateLimitReset(outcome.rateLimitReset, ctx.now);
      const wait = typeof ra === 'number' ? ra : typeof reset === 'number' ? reset : null;
      // An unusable Retry-After is flagged also when X-RateLimit-Reset gives the wait.
      const ignoredWait = ra === 'invalid' ? `Retry-After: ${outcome.retryAfter}` : wait === null && reset === 'invalid' ? `X-RateLimit-Reset: ${outcome.rateLimitReset}` : null;
      return { kind: 'retry', afterMs: wait ?? backoff(), reason: '429', pauseBudget: true, ignoredWait };
    }
    case 408:
      return serverBusy('timeout');
  }
  if (s >= 500) return serverBusy('5xx');
  // Any other 4xx (405, 410, ...): not an answer of the Events API; resending
  // will not change it. Keep the data and let an operator look.
  if (s >= 400 && s < 500) return { kind: 'park', reason: 'unexpected_response', detail: `HTTP ${s}` };
  return retry('network');
}

/** A 2xx: an acknowledgement only when its body is empty or one JSON object, as the Events API answers. */
function acknowledgement(outcome: Extract<SendOutcome, { kind: 'response' }>, wait: boolean): Verdict {
  const text = outcome.body.trim();
  const oddity: AckOddity | null = outcome.status === 202 && wait ? 'accepted_under_wait' : null;
  if (text === '' && !outcome.bodyTruncated) return { kind: 'ack', quarantinedRows: 0, oddity: oddity ?? 'empty_body' };
  // A body cut at 64 KiB still acknowledges when what was read is one JSON
  // object (the rest was whitespace); a cut object does not parse.
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    const type = outcome.contentType ?? 'no content-type';
    return { kind: 'park', reason: 'unexpected_response', detail: `HTTP ${outcome.status} with a body that is not the Events API's (${type}); check api.base_url` };
  }
  const { successful_rows: s, quarantined_rows: q } = parsed as { successful_rows?: unknown; quarantined_rows?: unknown };
  // A 202 answers before the rows are counted: its counts say nothing.
  const rows = outcome.status === 200 && (s !== undefined || q !== undefined) ? { successful: s, quarantined: q } : undefined;
  return { kind: 'ack', quarantinedRows: typeof q === 'number' && Number.isSafeInteger(q) && q > 0 ? q : 0, oddity, ...(rows ? { rows } : {}) };
}

/** The row counts of a 200, as the server sent them. */
export interface RowCounts {
  successful: unknown;
  quarantined: unknown;
}

/**
 * Do the counts of a 200 add up to the `lines` sent? They are the platform's
 * own (successful_rows + quarantined_rows = the rows of the request); others
 * (5000 for 5 lines, -5, 1e300) are a WARN, never a reason to resend or
 * lose lines, and only a quarantine count within the lines sent is counted.
 */
export function judgeRowCounts(rows: RowCounts | undefined, lines: number): { quarantined: number; mismatch: string | null } {
  if (!rows) return { quarantined: 0, mismatch: null };
  const sane = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 && n <= lines;
  const q = rows.quarantined ?? 0;
  const quarantined = sane(q) ? q : 0;
  const adds = sane(q) && (rows.successful === undefined || (sane(rows.successful) && rows.successful + q === lines));
  return { quarantined, mismatch: adds ? null : `successful_rows ${String(rows.successful)}, quarantined_rows ${String(rows.quarantined)} for ${lines} lines sent` };
}
