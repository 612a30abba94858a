// Chooses the request limiter for the agent's budget: the local one, or the
// budget shared through Redis when limits.redis_url is set.
import { createHash } from 'node:crypto';
import type { Config } from '../config/types.js';
import type { Logger } from '../log.js';
import type { Clock } from '../util/clock.js';
import { createLocalLimiter, type RateLimiter } from './limiter.js';
import type { BudgetMemory } from './budget-memory.js';
import { readKeyFileSync } from '../util/bounded-read.js';

export interface LimiterContext {
  limits: Config['limits'];
  /** Effective API base URL and token, to derive the default budget_id (never the token itself). */
  baseUrl: string;
  token: string;
  log: Logger;
  /** Called with true while the shared budget is unreachable and the local fallback is used. */
  onFallback: (active: boolean) => void;
  /** The local limiter's clock (a manual one in tests). */
  clock?: Clock;
  /** Where the local limiter keeps its last start across a reload (sender/budget-memory.ts). */
  memory?: BudgetMemory;
}

export async function createLimiter(ctx: LimiterContext): Promise<RateLimiter> {
  const limits = ctx.limits;
  if (!limits.redis_url) return createLocalLimiter(limits.requests_per_second, ctx.clock, ctx.memory);
  // Loaded only when configured: ioredis costs ~28 MB of RSS at start-up.
  const { RedisLimiter } = await import('./redis-limiter.js');
  return RedisLimiter.start({
    redisUrl: limits.redis_url,
    // Read now: a missing CA file is a start-up error, not a join failure that falls back quietly.
    redisCa: limits.redis_ca_file ? readKeyFileSync('limits.redis_ca_file', limits.redis_ca_file) : undefined,
    budgetId: limits.budget_id ?? deriveBudgetId(ctx.baseUrl, ctx.token),
    requestsPerSecond: limits.requests_per_second,
    fallbackRequestsPerSecond: limits.fallback_requests_per_second,
    log: ctx.log,
    onFallback: ctx.onFallback,
  });
}

/**
 * The default budget_id: agents that send to the same API origin with the same
 * token share a budget. A one-way hash, so Redis key names never reveal the
 * token; 64 bits keep unrelated tokens apart.
 */
export function deriveBudgetId(baseUrl: string, token: string): string {
  let origin = baseUrl;
  try {
    origin = new URL(baseUrl).origin;
  } catch {
    // Not a URL (validated earlier, so only in tests): hash it as written.
  }
  const digest = createHash('sha256').update(`spoolship budget\n${origin}\n${token}`).digest('hex');
  return `auto-${digest.slice(0, 16)}`;
}
