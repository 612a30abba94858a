// Longer than ~250 lines because the Lua script, its clock arithmetic and the
// broken-budget detection must be read together: each line of the script has
// a failure mode the TypeScript around it answers.
//
// One connection to the request budget shared through Redis. Every agent with
// the same budget key reserves request start times ("slots") from one Redis
// key with a small Lua script, so the fleet's requests are spaced `spacingMs`
// apart in total, whichever host sends them:
//
//   slot = max(redis_now, next); next = slot + spacing; return slot - redis_now
//
// The caller sleeps until its slot and sends. Time is Redis' own clock (TIME),
// so clock skew between hosts does not matter. The key expires when unused;
// an empty Redis (restarted, failed over) just means "the next slot is now".
//
// Why not bottleneck's clustering (the first plan for a fleet's budget): on
// Redis 7 it does not recover after a Redis restart (it matches
// "SETTINGS_KEY_NOT_FOUND" by exact text, Redis 7 prefixes "ERR "); its key
// expiry calls PEXPIRE with a fractional TTL when minTime is fractional
// (10.2 ms), which Redis rejects; disconnecting it on a dead socket leaves
// an unhandled rejection inside it; it computes slots from each client's
// Date.now(); and it starts a job at reply time + wait with no way to see
// that the slot went stale. That last one is measured: three agents on a
// busy 2-core host sent 106-113 requests in a sliding second at the emulator
// (40 429s), from bursts after event-loop stalls.
//
// Stale slots: a slot is only safe to use near its time. If this process was
// stalled (the reply or the timer came late), its callers send late, in
// between other agents' on-time requests, and a sliding second at the API
// counts more than the budget. So a caller's lateness is measured when it
// wakes: timer lateness plus how much longer than usual the reservation's
// round trip took (the baseline round trip tracks the network, so a distant
// Redis costs nothing here). Past LATE_TOLERANCE_MS the caller drops the slot
// and reserves a new one, at most MAX_RESERVATIONS times per request (then it
// sends anyway: progress under starvation beats a livelock). The budget
// wastes dropped slots, never exceeds them.
//
// A RedisBudget is single-use: no reconnects. The first failure (connection
// closed, command error or timeout) marks it lost and the owner
// (redis-limiter.ts) falls back to the local budget and joins a new one
// when Redis answers again.
import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { MAX_SERVER_WAIT_MS } from './retry-policy.js';

export interface RedisBudgetOptions {
  url: string;
  /** Extra CA (PEM) for a rediss:// url; without it Node's own CAs are trusted. */
  ca?: Buffer;
  /** Redis key of the budget: agents with the same key share one budget. */
  key: string;
  /** Spacing between request starts across every agent of the budget. */
  spacingMs: number;
  /**
   * When the budget key does not exist yet (an empty, restarted Redis), its
   * first slot is this far in the future: see redis-limiter.ts, rejoining.
   */
  quietIfNewMs: number;
  /** Connect or give up. */
  joinTimeoutMs: number;
  /** A command unanswered this long counts as Redis lost (a hung server or a black-holed network). */
  commandTimeoutMs: number;
  /** Called once, with the cause, when a joined budget is lost (a failed join throws instead). */
  onLost: (err: Error) => void;
}

export interface RedisBudget {
  /** Resolves when one request may start; rejects once the budget is lost. */
  acquire(): Promise<void>;
  /** The cause, once lost. */
  readonly lostError: Error | null;
  /** performance.now() of the latest slot reserved here: requests may still start until then. */
  readonly lastSlotMs: number;
  /** The join found the budget key broken and reset it. */
  readonly repairedAtJoin: boolean;
  /** A 429's Retry-After: no agent of the budget gets a slot for `ms` (at most MAX_PAUSE_MS). */
  pause(ms: number): Promise<void>;
  close(): Promise<void>;
}

/** A woken caller this much past its slot's earliest time drops the slot (see above). */
export const LATE_TOLERANCE_MS = 25;
/** Reservations per request before it is sent whatever the lateness. */
export const MAX_RESERVATIONS = 3;
/** The baseline round trip follows a lasting rise in latency by this share of the difference per reservation. */
const RTT_BASELINE_DRIFT = 0.01;
/** The budget key outlives the last reservation by this much, then Redis frees it. */
const KEY_IDLE_TTL_MS = 60_000;
/** A slot more than this past the end of any pause means the budget key is broken (README "Deployment"). */
export const BROKEN_AFTER_PAUSE_MS = 10_000;
/**
 * The longest pause a 429 may set for the fleet: the longest Retry-After
 * honoured (retry-policy.ts). A pause key further ahead is broken. Passed to
 * the scripts as an argument, so the bound lives in one place.
 */
export const MAX_PAUSE_MS = MAX_SERVER_WAIT_MS;
const MAX_PAUSE_US = MAX_PAUSE_MS * 1000;
const BROKEN_AFTER_PAUSE_US = BROKEN_AFTER_PAUSE_MS * 1000;

/** The Redis key of a budget's shared pause. */
export function pauseKey(budgetKey: string): string {
  return `${budgetKey}:pause`;
}

// A key's value, or 'wrong type' for a key of another type (a hash, say):
// no number, so broken like any other nonsense, where a GET's WRONGTYPE
// error failed the script and looked like an unreachable Redis, and the key
// was never repaired. SET and DEL replace a key of any type.
const GET_LUA = `
local function get(k)
  local v = redis.pcall('GET', k)
  if type(v) == 'table' and v.err then return 'wrong type' end
  return v
end`;

// KEYS[1] budget key; KEYS[2] its pause key (a 429's Retry-After, shared
// by every agent of the budget); ARGV[1] spacing (µs); ARGV[2] key TTL (ms);
// ARGV[3] first slot's delay when the key is new (µs); ARGV[4] 1 = repair a
// broken key (at join); ARGV[5] MAX_PAUSE_MS and ARGV[6]
// BROKEN_AFTER_PAUSE_MS, in µs. Returns the wait in µs from now until the
// reserved slot, or -1 when a key is broken (not a number, a slot more than
// BROKEN_AFTER_PAUSE_MS past the end of any pause, or a pause more than
// MAX_PAUSE_MS away: someone or something wrote it) and was left alone, or
// -2 when it was broken and reset. A pause read without that bound stalled a
// fleet for as long as someone had set it (a day), silently.
const RESERVE_LUA = `
${GET_LUA}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local repaired = false
local rawPause = get(KEYS[2])
local pause = 0
if rawPause then
  pause = tonumber(rawPause)
  if pause == nil or pause > now + tonumber(ARGV[5]) then
    if ARGV[4] ~= '1' then return -1 end
    redis.call('DEL', KEYS[2])
    pause = 0
    repaired = true
  end
end
local floor = math.max(now, pause)
local raw = get(KEYS[1])
local nxt = now + tonumber(ARGV[3])
if raw then
  local cur = tonumber(raw)
  if cur == nil or cur > floor + tonumber(ARGV[6]) then
    if ARGV[4] ~= '1' then return -1 end
    repaired = true
  else
    nxt = cur
  end
end
local slot = math.max(floor, nxt)
redis.call('SET', KEYS[1], string.format('%d', slot + tonumber(ARGV[1])), 'PX', ARGV[2])
if repaired then return -2 end
return slot - now
`;

// KEYS[1] pause key; ARGV[1] pause length (µs); ARGV[2] MAX_PAUSE_MS (µs),
// its bound. The pause only ever moves later, and expires with itself.
const PAUSE_LUA = `
${GET_LUA}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local most = tonumber(ARGV[2])
local want = now + math.min(tonumber(ARGV[1]), most)
local cur = tonumber(get(KEYS[1]) or '0') or 0
if cur > now + most then cur = 0 end
if want > cur then
  redis.call('SET', KEYS[1], string.format('%d', want), 'PX', math.ceil((want - now) / 1000) + 1000)
end
return 0
`;

type ReservingRedis = Redis & {
  spoolshipReserve(key: string, pause: string, spacingUs: number, ttlMs: number, quietIfNewUs: number, repair: number, maxPauseUs: number, brokenAfterUs: number): Promise<number>;
  spoolshipPause(pause: string, pauseUs: number, maxPauseUs: number): Promise<number>;
};

/** The budget key holds nonsense or a slot absurdly far away. */
export class BrokenBudgetError extends Error {
  constructor(key: string) {
    super(`the budget key ${key} holds a slot more than ${BROKEN_AFTER_PAUSE_MS / 1000} s past any pause, a pause more than ${MAX_PAUSE_MS / 1000} s away, or no number: someone or something wrote it`);
  }
}

export async function joinRedisBudget(o: RedisBudgetOptions): Promise<RedisBudget> {
  const client = new Redis(o.url, {
    lazyConnect: true,
    // Fail at once while disconnected instead of queueing behind a dead socket.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    // No reconnects: the owner decides when to join again (and logs it).
    retryStrategy: () => null,
    connectTimeout: o.joinTimeoutMs,
    commandTimeout: o.commandTimeoutMs,
    // rediss:// turns TLS on (ioredis); the CA, when given, goes with it.
    ...(o.ca && o.url.startsWith('rediss:') ? { tls: { ca: o.ca } } : {}),
  }) as ReservingRedis;
  client.defineCommand('spoolshipReserve', { numberOfKeys: 2, lua: RESERVE_LUA });
  client.defineCommand('spoolshipPause', { numberOfKeys: 1, lua: PAUSE_LUA });
  const pause = pauseKey(o.key);
  /** Aborted by lose(): sleeping callers wake at once (a close must not wait out a slot). */
  const lostAc = new AbortController();
  setMaxListeners(0, lostAc.signal);
  const spacingUs = Math.round(o.spacingMs * 1000);

  let joined = false;
  let repairedAtJoin = false;
  let lostError: Error | null = null;
  const lose = (cause: unknown): void => {
    if (lostError) return;
    lostError = cause instanceof Error ? cause : new Error(String(cause));
    lostAc.abort();
    client.disconnect();
    if (joined) o.onLost(lostError);
  };
  // Errors also surface as rejected commands or 'end'; the listener keeps an
  // unhandled 'error' event from killing the process.
  client.on('error', lose);
  client.on('end', () => lose(new Error('connection to Redis closed')));

  try {
    await withTimeout(client.connect(), o.joinTimeoutMs);
    // Creates the key (with its quiet start) if needed, and resets a broken
    // one (README "Deployment"); reserves nothing.
    const r = await client.spoolshipReserve(o.key, pause, 0, KEY_IDLE_TTL_MS, Math.round(o.quietIfNewMs * 1000), 1, MAX_PAUSE_US, BROKEN_AFTER_PAUSE_US);
    repairedAtJoin = r === -2;
  } catch (err) {
    lose(err);
    throw lostError;
  }
  joined = true;

  let baselineRttMs = Number.POSITIVE_INFINITY;
  let lastSlotMs = 0;
  /** Reserves a slot; returns when to send and how late the reply already was. */
  const reserve = async (): Promise<{ dueMs: number; excessRttMs: number }> => {
    if (lostError) throw lostError;
    const sentMs = performance.now();
    let waitUs: number;
    try {
      waitUs = await client.spoolshipReserve(o.key, pause, spacingUs, KEY_IDLE_TTL_MS, 0, 0, MAX_PAUSE_US, BROKEN_AFTER_PAUSE_US);
    } catch (err) {
      lose(err);
      throw lostError;
    }
    if (waitUs < 0) {
      lose(new BrokenBudgetError(o.key));
      throw lostError;
    }
    const replyMs = performance.now();
    const rttMs = replyMs - sentMs;
    baselineRttMs = rttMs < baselineRttMs ? rttMs : baselineRttMs + (rttMs - baselineRttMs) * RTT_BASELINE_DRIFT;
    // The script ran between sending and this reply, so waiting from the
    // reply on is never early; it is late by up to the round trip's excess.
    const dueMs = replyMs + waitUs / 1000;
    lastSlotMs = Math.max(lastSlotMs, dueMs);
    return { dueMs, excessRttMs: rttMs - baselineRttMs };
  };

  return {
    get lostError() {
      return lostError;
    },
    get lastSlotMs() {
      return lastSlotMs;
    },
    repairedAtJoin,
    pause: async (ms: number) => {
      if (lostError) return;
      await client.spoolshipPause(pause, Math.round(Math.min(ms, MAX_PAUSE_MS) * 1000), MAX_PAUSE_US).catch(lose);
    },
    close: async () => {
      joined = false; // a deliberate close is no loss to report
      lose(new Error('shared budget closed'));
    },
    acquire: async () => {
      for (let n = 1; ; n++) {
        const slot = await reserve();
        await sleepUnless(slot.dueMs - performance.now(), lostAc.signal);
        if (lostError) throw lostError;
        const lateMs = performance.now() - slot.dueMs + slot.excessRttMs;
        if (lateMs <= LATE_TOLERANCE_MS || n >= MAX_RESERVATIONS) return;
      }
    },
  };
}

/** Sleep `ms`, or less when `signal` aborts first (the timer is cleared then: nothing keeps the process up). */
function sleepUnless(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
