// Chooses the request limiter for the agent's budget: the local one, or the
// budget shared through Redis when limits.redis_url is set.
import type { Config } from '../config/types.js';
import type { Logger } from '../log.js';
import { createLocalLimiter, type RateLimiter } from './limiter.js';

export interface LimiterContext {
  limits: Config['limits'];
  /** Effective API base URL and token, to derive the default budget_id (never the token itself). */
  baseUrl: string;
  token: string;
  log: Logger;
  /** Called with true while the shared budget is unreachable and the local fallback is used. */
  onFallback: (active: boolean) => void;
}

export async function createLimiter(ctx: LimiterContext): Promise<RateLimiter> {
  if (ctx.limits.redis_url) {
    ctx.log.warn('limits.redis_url is set but the shared Redis budget is not built yet; using the local budget');
  }
  return createLocalLimiter(ctx.limits.requests_per_second);
}
