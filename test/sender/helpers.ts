// A real Sender, real undici client and real emulator, with a manual clock for
// every wait the sender makes, and a record of the exact bodies it sent.
import { afterEach } from 'vitest';
import { createCodec } from '../../src/codec/index.js';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/index.js';
import { EventsClient } from '../../src/sender/http-client.js';
import { createLocalLimiter } from '../../src/sender/limiter.js';
import { Sender, type RootBatch, type SenderHooks, type SplitEvent } from '../../src/sender/sender.js';
import { ManualClock } from '../support/manual-clock.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

export interface Harness {
  emu: Emulator;
  sender: Sender;
  clock: ManualClock;
  sent: Array<{ ds: string; body: Buffer }>;
  deadLetters: Array<{ ds: string; reason: string; status: number | null; lines: string[] }>;
  parks: Array<{ scope: string; reason: string | null }>;
  /** At each onRefused: the Data Sources refused then (Sender.refusedDataSources, sorted). */
  refused: string[][];
  /** The parks heard as unconfirmed (a 403 that another Data Source under way may yet prove a missing Data Source), in order. */
  unconfirmed: Array<{ scope: string; reason: string | null }>;
  retries: string[];
  /** The 413 episode's start and end events, in order. */
  splits: SplitEvent[];
  /** spoolship_in_flight_limit as the sender reported it, in order. */
  limits: number[];
  token: { value: string };
  /** Called before each request with how many were sent before it (change the token, the faults...). */
  beforePost: ((sentBefore: number) => void) | null;
  /** Its answer reaches the sender once this resolves (a late answer), by the same count. */
  answerHeld: ((sentBefore: number) => Promise<void>) | null;
  batch(ds: string, lines: string[], id?: number): Promise<RootBatch>;
}

export async function harness(emuOpts: EmulatorOptions = {}, opts: { maxBytes?: number; codec?: 'zstd' | 'none'; probeBudget?: number; maxInFlight?: number; stateHeld?: () => boolean } = {}): Promise<Harness> {
  const emu = await startEmulator({ listen: '127.0.0.1:0', recordRequests: true, ...emuOpts });
  cleanups.push(() => emu.close());
  const clock = new ManualClock();
  const token = { value: emu.token };
  const client = new EventsClient({ baseUrl: emu.url, token: { get: () => token.value }, wait: true, http2: false, caFile: null, timeoutMs: 5000, maxConnections: 4 });
  cleanups.push(() => client.destroy());
  const sent: Harness['sent'] = [];
  const spy = {
    post: async (ds: string, body: Buffer, enc: string | null) => {
      const n = sent.length;
      h.beforePost?.(n);
      sent.push({ ds, body });
      const outcome = await client.post(ds, body, enc);
      await h.answerHeld?.(n);
      return outcome;
    },
  };
  const deadLetters: Harness['deadLetters'] = [];
  const parks: Harness['parks'] = [];
  const refused: Harness['refused'] = [];
  const unconfirmed: Harness['unconfirmed'] = [];
  const retries: string[] = [];
  const splits: SplitEvent[] = [];
  const limits: number[] = [];
  const hooks: SenderHooks = {
    onInFlightLimit: (n) => limits.push(n),
    onRequest: () => undefined,
    onRetry: (reason) => retries.push(reason),
    onSplit: (e) => splits.push(e),
    onAck: () => undefined,
    onParkChange: (scope, reason, _previous, _detail, tentative) => {
      parks.push({ scope: scope === 'budget' ? 'budget' : scope.ds, reason });
      if (tentative) unconfirmed.push({ scope: scope === 'budget' ? 'budget' : scope.ds, reason });
    },
    onRefused: () => refused.push([...sender.refusedDataSources()].sort()),
    deadLetterLines: async (_root, parts, reason, status) => {
      for (const { part, raw } of parts) deadLetters.push({ ds: part.ds, reason, status, lines: raw.toString().split('\n').filter(Boolean) });
    },
  };
  const codec = createCodec(opts.codec ?? 'zstd', 3);
  const limiter = createLocalLimiter(1000);
  cleanups.push(() => limiter.close());
  const sender = new Sender({
    client: spy,
    codec,
    limiter,
    clock,
    random: () => 0.5,
    backoff: { initialMs: 1000, maxMs: 60_000, multiplier: 2 },
    http2: false,
    maxInFlight: opts.maxInFlight ?? 4,
    probeBudget: opts.probeBudget,
    maxBytes: opts.maxBytes ?? 10_000_000,
    hooks,
    stateHeld: opts.stateHeld,
  });
  // destroy, not close: a request left on the wire by a failed test is cut, not waited for.
  cleanups.push(() => sender.destroy());
  let nextId = 1;
  const h: Harness = {
    emu,
    sender,
    clock,
    sent,
    deadLetters,
    parks,
    refused,
    unconfirmed,
    retries,
    splits,
    limits,
    token,
    beforePost: null,
    answerHeld: null,
    async batch(ds, lines, id) {
      const raw = Buffer.from(lines.map((l) => `${l}\n`).join(''));
      return { id: id ?? nextId++, ds, body: await codec.compress(raw), encoding: codec.contentEncoding, rawLen: raw.length, lines: lines.length };
    },
  };
  return h;
}

/** Let pending I/O and promise chains run until `cond` holds (no clock movement). */
export async function settle(cond: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export function lines(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => JSON.stringify({ k: `${prefix}${i}` }));
}
