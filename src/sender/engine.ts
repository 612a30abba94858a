// The one delivery engine of `run`, `send` and `dead-letter replay`: the HTTP
// client, the request budget (local, or the fleet's shared one in Redis when
// limits.redis_url is set) and the codec, built from the config in one place,
// and the Sender built on them with the config's retry and limit settings
// (from-config.ts). What differs between the commands is only what their
// hooks do with a park: `run` waits and probes every 60 s, `send` and
// `replay` stop and report. Retries, Retry-After, 400 bisection and 413
// splits are decided by the Sender alone (README "How each server answer is
// handled").
import { createCodec, type Codec } from '../codec/index.js';
import type { Config } from '../config/types.js';
import type { Logger } from '../log.js';
import type { NetworkSetup } from '../net/setup.js';
import type { Clock } from '../util/clock.js';
import type { LongLived } from '../util/lifecycle.js';
import { clientOptionsFrom, senderSettingsFrom } from './from-config.js';
import { EventsClient, type BearerToken } from './http-client.js';
import type { RateLimiter } from './limiter.js';
import { createLimiter } from './limiter-factory.js';
import { Sender, type SenderHooks, type SenderOptions } from './sender.js';
import type { BudgetMemory } from './budget-memory.js';

export interface DeliveryEngine extends LongLived {
  client: EventsClient;
  limiter: RateLimiter;
  codec: Codec;
  /** Let requests under way finish, then close the connections and the budget. */
  close(): Promise<void>;
  /** Cut the connections (requests on them end with an error), close the budget. */
  destroy(): Promise<void>;
}

export interface EngineContext {
  baseUrl: string;
  /** The proxy route and the client certificate (src/net/setup.ts). */
  network: NetworkSetup;
  token: BearerToken;
  /** Where the shared budget's warnings go (a fallback to the local limit). */
  log: Logger;
  onFallback?: (active: boolean) => void;
  /** The codec, when the caller made it already (the agent shares it with the pipeline). */
  codec?: Codec;
  /** The local request budget's clock (the agent's injected clock). */
  clock?: Clock;
  /** The budget's memory across a reload (budget-memory.ts): the local limiter's last start. */
  memory?: BudgetMemory;
}

export async function openDelivery(c: Readonly<Config>, ctx: EngineContext): Promise<DeliveryEngine> {
  const client = new EventsClient(clientOptionsFrom(c, ctx.baseUrl, ctx.token, ctx.network));
  let limiter: RateLimiter;
  try {
    limiter = await createLimiter({ limits: c.limits, baseUrl: ctx.baseUrl, token: ctx.token.get(), log: ctx.log, onFallback: ctx.onFallback ?? (() => undefined), clock: ctx.clock, memory: ctx.memory });
  } catch (err) {
    await client.destroy();
    throw err;
  }
  const codec = ctx.codec ?? createCodec(c.compression.codec, c.compression.level);
  return {
    client,
    limiter,
    codec,
    async close() {
      await client.close();
      await limiter.close();
    },
    async destroy() {
      await client.destroy();
      await limiter.destroy();
    },
  };
}

/** A Sender on the engine, with the config's settings and the caller's hooks. */
export function createSender(engine: DeliveryEngine, c: Readonly<Config>, o: { hooks: SenderHooks; clock: Clock; random?: () => number; memory?: BudgetMemory; stateHeld?: () => boolean }): Sender {
  const options: SenderOptions = {
    client: engine.client,
    codec: engine.codec,
    limiter: engine.limiter,
    clock: o.clock,
    random: o.random ?? Math.random,
    ...senderSettingsFrom(c),
    hooks: o.hooks,
    memory: o.memory,
    stateHeld: o.stateHeld,
  };
  return new Sender(options);
}
