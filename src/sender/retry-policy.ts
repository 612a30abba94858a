// The one place where an answer becomes a decision (SPEC section 4).
//
// | answer                         | verdict                                       |
// |--------------------------------|-----------------------------------------------|
// | 200, 202 (and other 2xx)       | ack                                           |
// | 400                            | split (bisect; the sender isolates bad lines) |
// | 401, 403                       | park token_rejected                           |
// | 404                            | park workspace_not_found                      |
// | 413                            | split (halves; lower the learned size)        |
// | 422                            | dead_letter materialized_view_error           |
// | 429                            | retry after Retry-After / X-RateLimit-Reset / backoff, pause the budget |
// | 408, 5xx, timeouts, resets     | retry after full-jitter backoff               |
// | HTTP/2 GOAWAY                  | retry at once on a new connection             |
// | any other status               | retry after backoff (keeps the data; logged)  |

import type { SendOutcome } from './http-client.js';

export type RetryReason = '429' | '5xx' | 'timeout' | 'network' | 'goaway' | '413' | '400';
export type ParkReason = 'token_rejected' | 'workspace_not_found' | 'bad_request' | 'disk_full' | 'state_dir_unwritable';

export type Verdict =
  | { kind: 'ack' }
  | { kind: 'retry'; afterMs: number; reason: RetryReason; pauseBudget: boolean }
  | { kind: 'split'; reason: '413' | '400' }
  | { kind: 'park'; reason: 'token_rejected' | 'workspace_not_found' }
  | { kind: 'dead_letter'; reason: 'materialized_view_error' };

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

/** Retry-After: delta-seconds or an HTTP date. Returns ms from `now`, or null. */
export function parseRetryAfter(value: string | null, now: number): number | null {
  if (value === null || value.trim() === '') return null;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Math.ceil(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

export interface ClassifyContext {
  /** Consecutive failed attempts of this batch so far (0 on the first answer). */
  attempt: number;
  /** True when the previous failure of this batch was also treated as a GOAWAY. */
  afterGoaway: boolean;
  http2: boolean;
  now: number;
  backoff: BackoffOptions;
  random: () => number;
}

export function classify(outcome: SendOutcome, ctx: ClassifyContext): Verdict {
  const backoff = () => backoffMs(ctx.attempt, ctx.backoff, ctx.random);
  if (outcome.kind === 'error') {
    if (outcome.timeout) return { kind: 'retry', afterMs: backoff(), reason: 'timeout', pauseBudget: false };
    // undici reports an HTTP/2 GOAWAY as UND_ERR_SOCKET (only the message
    // says GOAWAY, and we never branch on messages): on HTTP/2 the first
    // socket error of a streak is resent at once on a new connection; a
    // second one in a row backs off like any reset.
    if (ctx.http2 && outcome.code === 'UND_ERR_SOCKET' && !ctx.afterGoaway) {
      return { kind: 'retry', afterMs: 0, reason: 'goaway', pauseBudget: false };
    }
    return { kind: 'retry', afterMs: backoff(), reason: 'network', pauseBudget: false };
  }
  const s = outcome.status;
  if (s >= 200 && s < 300) return { kind: 'ack' };
  switch (s) {
    case 400:
      return { kind: 'split', reason: '400' };
    case 401:
    case 403:
      return { kind: 'park', reason: 'token_rejected' };
    case 404:
      return { kind: 'park', reason: 'workspace_not_found' };
    case 413:
      return { kind: 'split', reason: '413' };
    case 422:
      return { kind: 'dead_letter', reason: 'materialized_view_error' };
    case 429: {
      const wait =
        parseRetryAfter(outcome.retryAfter, ctx.now) ??
        (outcome.rateLimitReset !== null && /^\d+(\.\d+)?$/.test(outcome.rateLimitReset.trim())
          ? Math.ceil(Number(outcome.rateLimitReset) * 1000)
          : null) ??
        backoff();
      return { kind: 'retry', afterMs: wait, reason: '429', pauseBudget: true };
    }
    case 408:
      return { kind: 'retry', afterMs: backoff(), reason: 'timeout', pauseBudget: false };
    default:
      return { kind: 'retry', afterMs: backoff(), reason: s >= 500 ? '5xx' : 'network', pauseBudget: false };
  }
}
