// The sending half of `dead-letter replay`: the agent's own Sender (retries,
// Retry-After, 400 bisection, 413 splits), EventsClient, codec and budget,
// built from the config, with hooks that turn the Sender's callbacks into
// one answer per line. Retries and splits are decided by the Sender alone,
// as in `run` and `send`: a 400 is bisected down to the bad lines, and only
// when single lines from 3 quarters of a batch fail with nothing accepted is
// the problem the Data Source's own (README "How each server answer is
// handled"): then the replay stops with bad_request.
//
// A parked budget (401/403: token_rejected, 404: workspace_not_found) stops
// the replay at once: the agent would wait and probe every 60 s; a one-shot
// command reports and exits instead. Lines whose batch was stopped are
// 'unsent' (kept as they were); lines of a stopped batch that were
// acknowledged before the stop are not known, so they may be sent again
// (duplicates, never losses), as in the agent.
//
// Each batch gets its own Sender (sharing the client, codec and budget), so
// a Data Source park of one batch never holds the others.
import type { Config } from '../config/types.js';
import { apiBaseUrl } from '../config/index.js';
import { createLogger } from '../log.js';
import { createSender, openDelivery, type DeliveryEngine } from '../sender/engine.js';
import { TokenSource } from '../sender/token.js';
import { readNetworkSetup } from '../net/setup.js';
import type { Logger } from '../log.js';
import type { RootBatch, Sender } from '../sender/sender.js';
import { systemClock } from '../util/clock.js';
import type { DeadLetterReason } from './store.js';

export type LineResult = { kind: 'ack' } | { kind: 'rejected'; reason: DeadLetterReason; status: number | null } | { kind: 'unsent' };
export type StopReason = 'token_rejected' | 'workspace_not_found' | 'bad_request' | 'interrupted';

/** What replay.ts needs from a sender (tests may fake it). */
export interface LineSender {
  /** One answer per line, in order. */
  send(ds: string, lines: readonly Buffer[]): Promise<LineResult[]>;
  readonly stopReason: StopReason | null;
  stop(reason: StopReason): void;
  close(): Promise<void>;
}

export interface ReplaySenderEvents {
  /** A retry streak started (once per reason until an answer is final), with its cause (the error or the status). */
  onRetry?(reason: string, ds: string, cause: string | null): void;
  onStop?(reason: StopReason, scope: string): void;
  /** Where the shared budget's warnings go (a fallback to the local limit); stderr when absent. */
  log?: Logger;
}

/** `env`: what `api.proxy: null` reads (HTTPS_PROXY and the like). */
export async function createReplaySender(config: Readonly<Config>, env: NodeJS.ProcessEnv, events: ReplaySenderEvents = {}): Promise<LineSender> {
  const token = await TokenSource.create(config.api.token, config.api.token_file);
  const baseUrl = apiBaseUrl(config);
  // The same engine and budget as `run` (with limits.redis_url: the fleet's shared one), so a replay never adds to a 429 storm.
  const engine = await openDelivery(config, {
    baseUrl,
    network: await readNetworkSetup(config, baseUrl, env),
    token,
    log: events.log ?? createLogger({ level: 'warn', format: config.log.format }, process.stderr),
  });
  return new ReplaySender(config, engine, events);
}

interface Attempt {
  sender: Sender;
  answers: LineResult[];
  requestLevel: boolean;
}

class ReplaySender implements LineSender {
  stopReason: StopReason | null = null;
  private readonly live = new Set<Sender>();
  private nextId = 1;
  private readonly retrying = new Set<string>();
  /** After an interruption: cuts the requests still on the wire (their records are kept). */
  private cutTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly config: Readonly<Config>,
    private readonly engine: DeliveryEngine,
    private readonly events: ReplaySenderEvents,
  ) {}

  async send(ds: string, lines: readonly Buffer[]): Promise<LineResult[]> {
    if (this.stopReason) return lines.map(() => ({ kind: 'unsent' }));
    const r = await this.attempt(ds, lines);
    // The Sender found the requests themselves bad (the Data Source's name, say): nothing more of this replay can ship there.
    if (r.requestLevel) this.stop('bad_request', ds);
    return r.answers;
  }

  /** One delivery of `lines` as one root batch through a Sender of its own. */
  private async attempt(ds: string, lines: readonly Buffer[]): Promise<Attempt> {
    const a: Attempt = { sender: null as unknown as Sender, answers: lines.map(() => ({ kind: 'unsent' })), requestLevel: false };
    a.sender = this.createSender(a);
    const raw = Buffer.concat(lines.flatMap((l) => [l, NEWLINE]));
    const root: RootBatch = { id: this.nextId++, ds, body: await this.engine.codec.compress(raw), encoding: this.engine.codec.contentEncoding, rawLen: raw.length, lines: lines.length };
    this.live.add(a.sender);
    try {
      // 'done': every part was acknowledged or rejected. 'aborted': parts
      // may have been acknowledged before the stop, but which is unknown;
      // they stay (a duplicate is better than a loss).
      if ((await a.sender.deliver(root)) === 'done') {
        for (let i = 0; i < a.answers.length; i++) if (a.answers[i]!.kind === 'unsent') a.answers[i] = { kind: 'ack' };
      }
      return a;
    } finally {
      this.live.delete(a.sender);
    }
  }

  private createSender(a: Attempt): Sender {
    return createSender(this.engine, this.config, {
      clock: systemClock,
      hooks: {
        onRequest: () => undefined,
        onRetry: (reason, ds, cause) => {
          if (reason === '400' || reason === '413' || this.retrying.has(reason)) return;
          this.retrying.add(reason);
          this.events.onRetry?.(reason, ds, cause ?? null);
        },
        onAck: () => this.retrying.clear(),
        onParkChange: (scope, reason) => {
          if (reason === 'token_rejected' || reason === 'workspace_not_found') this.stop(reason, 'budget');
          else if (reason === 'bad_request') {
            a.requestLevel = true;
            void a.sender.close();
          }
        },
        deadLetterLines: async (_root, parts, reason, status) => {
          for (const { part } of parts) for (let i = 0; i < part.lines; i++) a.answers[part.lineStart + i] = { kind: 'rejected', reason, status };
        },
      },
    });
  }

  stop(reason: StopReason, scope = 'replay'): void {
    if (this.stopReason) return;
    this.stopReason = reason;
    this.events.onStop?.(reason, scope);
    for (const s of this.live) void s.close();
    // Ctrl-C, SIGTERM: answers are waited for shutdown_timeout_ms, as `run` waits, not a hung request's own timeout.
    if (reason === 'interrupted') {
      this.cutTimer = setTimeout(() => {
        for (const s of this.live) void s.destroy();
      }, this.config.shutdown_timeout_ms);
      this.cutTimer.unref();
    }
  }

  async close(): Promise<void> {
    if (this.cutTimer) clearTimeout(this.cutTimer);
    for (const s of this.live) void s.close();
    await this.engine.close();
  }
}

const NEWLINE = Buffer.from('\n');
