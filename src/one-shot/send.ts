// `spoolship send`: ship files or stdin once through the same batcher,
// sender and retry policy as the agent, keeping no checkpoint. Lines the
// platform rejects go to the dead-letter store of state_dir, as with `run`.
// A rejected token or host (401/403/404) or a request-level 400 stops the
// run at once: nothing is retried forever.
import { Batcher, type ClosedBatch } from '../batcher/batcher.js';
import type { Config } from '../config/types.js';
import type { DeadLetterInput, DeadLetterStore } from '../deadletter/store.js';
import type { Logger } from '../log.js';
import { createSender, openDelivery } from '../sender/engine.js';
import type { NetworkSetup } from '../net/setup.js';
import { inFlightCeiling } from '../sender/from-config.js';
import type { Sender } from '../sender/sender.js';
import path from 'node:path';
import { deadLetterInputs } from '../deadletter/from-batch.js';
import type { RangeRecord } from '../state/journal.js';
import { Progress } from '../state/progress.js';
import { retryText } from './progress.js';
import { systemClock } from '../util/clock.js';
import { LineFramer } from './line-framer.js';

export interface SendInput {
  /** File path, or "-" for stdin. */
  name: string;
  size: number | null;
  open(): AsyncIterable<Buffer>;
}

export interface SendSummary {
  datasource: string;
  ok: boolean;
  error: string | null;
  lines_read: number;
  lines_acked: number;
  /** Rows the platform stored in <datasource>_quarantine. */
  rows_quarantined: number;
  lines_dead_lettered: Record<string, number>;
  /** Lines for the dead-letter store that it had no room for (dead_letter.max_bytes): lost. */
  lines_lost: number;
  requests: Record<string, number>;
  bytes_read: number;
  bytes_sent: number;
  seconds: number;
}

export interface SendOptions {
  config: Readonly<Config>;
  baseUrl: string;
  token: string;
  /** The proxy route and client certificate (src/net/setup.ts). */
  network: NetworkSetup;
  datasource: string;
  inputs: SendInput[];
  deadLetters: DeadLetterStore;
  log: Logger;
  /** Live counters for the progress display. */
  onProgress?: (s: SendSummary) => void;
  /** Bytes of lines acknowledged or dead-lettered (newlines included): the progress bar follows them. */
  onDone?: (bytes: number) => void;
  /** Why requests are being retried now (`reason: cause`), null again at the next acknowledgement: the progress line shows it. */
  onRetrying?: (why: string | null) => void;
  /** Aborted (Ctrl-C): nothing more is sent; the summary says what was not acknowledged. */
  signal?: AbortSignal;
}

const SLACK = 2;

export async function runSend(o: SendOptions): Promise<SendSummary> {
  const c = o.config;
  const started = Date.now();
  const summary: SendSummary = {
    datasource: o.datasource,
    ok: false,
    error: null,
    lines_read: 0,
    lines_acked: 0,
    rows_quarantined: 0,
    lines_dead_lettered: {},
    lines_lost: 0,
    requests: {},
    bytes_read: 0,
    bytes_sent: 0,
    seconds: 0,
  };
  const countDl = (reason: string, n: number) => (summary.lines_dead_lettered[reason] = (summary.lines_dead_lettered[reason] ?? 0) + n);
  // The same engine as `run`: with limits.redis_url, the fleet's shared budget.
  const engine = await openDelivery(c, { baseUrl: o.baseUrl, network: o.network, token: { get: () => o.token }, log: o.log });
  const codec = engine.codec;
  const storeDeadLetter = async (input: DeadLetterInput) => {
    if ((await o.deadLetters.add(input)) === 'dropped') summary.lines_lost += 1;
    else countDl(input.reason, 1);
    o.onDone?.(input.bytes + 1);
  };
  const sender: Sender = createSender(engine, c, {
    clock: systemClock,
    hooks: {
      onRequest: (_ds, status, _s, wire) => {
        summary.requests[String(status)] = (summary.requests[String(status)] ?? 0) + 1;
        summary.bytes_sent += wire;
      },
      onRetry: (reason, _ds, cause) => o.onRetrying?.(retryText(reason, cause)),
      onAck: (_ds, lines, raw, quarantined) => {
        o.onRetrying?.(null);
        o.onDone?.(raw);
        summary.lines_acked += lines;
        summary.rows_quarantined += quarantined;
      },
      onParkChange: (_scope, reason, _previous, detail) => {
        if (!reason) return;
        summary.error ??= parkMessage(reason, detail, o.datasource);
        void sender.close();
      },
      deadLetterLines: async (root, parts, reason, status) => {
        // Where each line came from, read back from its file (stdin cannot be: null).
        const pieces = parts.map((p) => ({ lineStart: p.part.lineStart, raw: p.raw }));
        const inputs = await deadLetterInputs(root.ds, pieces, reason, status, batchRanges.get(root.id), (k) => fileOf(k));
        await Promise.all(inputs.map((input) => storeDeadLetter(input)));
      },
    },
  });

  const tasks = new Set<Promise<void>>();
  let roomWaiter: (() => void) | null = null;
  const progress = new Progress();
  /** The file ranges of each batch being sent, to name a rejected line's FILE:OFFSET. */
  const batchRanges = new Map<number, RangeRecord[]>();
  const fileOf = (key: string): string | undefined => {
    const input = o.inputs[Number(key.slice('send:'.length))];
    return input ? (deadLetterFile(input.name) ?? undefined) : undefined;
  };
  const deliver = async (b: ClosedBatch) => {
    if (b.lines === 0) return;
    batchRanges.set(b.id, progress.rangesOf(b.id));
    try {
      const body = await codec.compress(b.body);
      await sender.deliver({ id: b.id, ds: b.ds, body, encoding: codec.contentEncoding, rawLen: b.body.length, lines: b.lines }, { neverSent: true });
    } finally {
      batchRanges.delete(b.id);
      progress.markOwnerDone(b.id);
    }
  };
  let nextId = 1;
  const batcher = new Batcher({
    progress,
    batchIds: { newBatchId: () => nextId++ },
    now: () => Date.now(),
    maxBytes: c.batch.max_bytes,
    maxLineBytes: c.spool.max_line_bytes,
    maxOpenBytes: c.batch.max_open_bytes,
    validateJson: c.validate === 'json',
    sizeCaps: sender,
    onClose: (b) => {
      const t: Promise<void> = deliver(b)
        .catch((err) => {
          summary.error ??= String(err);
        })
        .finally(() => {
          tasks.delete(t);
          roomWaiter?.();
        });
      tasks.add(t);
    },
    onDeadLetter: (input) => {
      // A line the batcher refused (too long, invalid JSON), named as a line the platform rejected (never twice: stdin has no tailer).
      if (!input) return;
      const file = input.file === null ? null : deadLetterFile(input.file);
      const named = { ...input, file, offset: file === null ? null : input.offset };
      const t: Promise<void> = storeDeadLetter(named).finally(() => tasks.delete(t));
      tasks.add(t);
    },
    onLinesRead: (_ds, lines, bytes) => {
      summary.lines_read += lines;
      summary.bytes_read += bytes;
    },
  });
  // Ctrl-C, SIGTERM: answers are waited for shutdown_timeout_ms, as `run` waits, then the requests still on the wire are cut.
  let cut: NodeJS.Timeout | null = null;
  /** Every input was read to its end before any interruption. */
  let inputRead = false;
  const interrupted = () => {
    summary.error ??= 'interrupted: nothing more was sent; the lines not acknowledged must be sent again';
    void sender.close();
    cut = setTimeout(() => void sender.destroy(), c.shutdown_timeout_ms);
    roomWaiter?.();
  };
  if (o.signal?.aborted) interrupted();
  o.signal?.addEventListener('abort', interrupted, { once: true });
  const tick = setInterval(() => {
    batcher.closeExpired(c.batch.linger_ms);
    o.onProgress?.(summary);
  }, Math.max(10, Math.min(200, c.batch.linger_ms)));
  try {
    for (const [i, input] of o.inputs.entries()) {
      const key = `send:${i}`;
      progress.addFile({ key, dev: 0, ino: i, gen: 0, fp: '', fpLen: 0, path: input.name, ds: o.datasource }, 0);
      const framer = new LineFramer({ key, ds: o.datasource, path: input.name }, batcher, c.spool.max_line_bytes);
      for await (const chunk of input.open()) {
        if (summary.error) break;
        framer.push(chunk);
        while (tasks.size >= inFlightCeiling(c) + SLACK && !summary.error) {
          await new Promise<void>((resolve) => (roomWaiter = resolve));
        }
      }
      if (summary.error) break;
      framer.end();
    }
    if (!summary.error) inputRead = true;
    batcher.closeAll();
    while (tasks.size > 0) await Promise.allSettled([...tasks]);
  } finally {
    o.signal?.removeEventListener('abort', interrupted);
    if (cut) clearTimeout(cut);
    clearInterval(tick);
    void sender.close();
    await engine.close().catch(() => undefined);
    await o.deadLetters.flush();
  }
  const dead = Object.values(summary.lines_dead_lettered).reduce((a, b) => a + b, 0);
  // Interrupted once everything was read, and every line was answered before the stop ended: nothing is left to send again.
  if (inputRead && summary.error?.startsWith('interrupted') && summary.lines_acked + dead === summary.lines_read) summary.error = null;
  if (!summary.error && summary.lines_acked + dead < summary.lines_read) summary.error = 'not every line was acknowledged';
  summary.ok = summary.error === null && dead === 0 && summary.lines_lost === 0;
  summary.seconds = (Date.now() - started) / 1000;
  return summary;
}

/** Why `send` stopped at a park, naming the answer (a redirect's Location, the status) and what to check. */
function parkMessage(reason: string, detail: string | null, datasource: string): string {
  switch (reason) {
    case 'token_rejected':
      // With one Data Source, a 403 for a Data Source the token may not
      // create cannot be told from a bad token by the sender: say both.
      return (
        `the API rejected the token or its scope (${detail ?? '401/403'}): check api.token / SPOOLSHIP_TOKEN; ` +
        `if Data Source ${JSON.stringify(datasource)} does not exist yet, the token needs DATASOURCE:CREATE (or create the Data Source first)`
      );
    case 'workspace_not_found':
      return 'the API answered 404: the token belongs to another region; set api.base_url to its host';
    case 'unexpected_response': {
      const what = detail ?? 'a redirect, an unexpected 4xx or a non-JSON 2xx';
      return `the answer is not the Events API's: ${what}${what.includes('check api.base_url') ? '' : '; check api.base_url'}`;
    }
    case 'datasource_rejected':
      return `the API refused Data Source ${JSON.stringify(datasource)} (403) while accepting the token: it does not exist and the token may not create it`;
    default:
      return `the API rejected single lines from 3 parts of a batch and accepted none (400): the request itself looks wrong (the Data Source name ${JSON.stringify(datasource)} or the token's scope); nothing was dead-lettered`;
  }
}

/** A send input as a dead letter names it: the FILE's absolute path; stdin ('-') has none (nor an offset). */
function deadLetterFile(name: string): string | null {
  return name === '-' ? null : path.resolve(name);
}
