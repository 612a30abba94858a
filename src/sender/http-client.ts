// Sends one Events API request and reports what happened as a value. It
// never retries (the RetryPolicy is the one retry owner) and never throws for
// an HTTP status or a network fault.
//
// undici (~45 ms to load on Node 20, a third of start-up) is imported when
// the first request needs it, or earlier through warm(): the agent calls it
// when its first batch goes to compression, so the module loads on the main
// thread while the threadpool compresses instead of before any file is read.
import { readKeyFileSync } from '../util/bounded-read.js';
import { Readable } from 'node:stream';
import { MIN_SECRET_LENGTH, scrub } from '../config/redact.js';
import type { LongLived } from '../util/lifecycle.js';
import type { Dispatcher } from 'undici';
import { DIRECT, type ProxyRoute } from '../config/proxy.js';
import type { ClientIdentity } from '../net/client-identity.js';
import { createDispatcher, ProxyFailure } from '../net/dispatcher.js';
import { loadUndiciParts } from '../net/undici-parts.js';
import { TlsFailureMemo } from '../net/tls-failure.js';
import type { Body } from './body.js';

export type SendOutcome =
  | {
      kind: 'response';
      status: number;
      retryAfter: string | null;
      rateLimitReset: string | null;
      /** Location of a 3xx (never followed), for the log. */
      location: string | null;
      contentType: string | null;
      /** At most MAX_ANSWER_BYTES of the answer, as UTF-8 text. */
      body: string;
      /** The answer was longer than MAX_ANSWER_BYTES: the rest was discarded. */
      bodyTruncated: boolean;
    }
  | { kind: 'error'; code: string; timeout: boolean; message: string };

/**
 * The most of any answer's body that is read (64 KiB). A hostile or broken
 * server once sent an endless 200 body: reading it whole took the agent to
 * 4.6 GB RSS and a V8 fatal error. Past this the body is discarded and the
 * request aborted, which closes that HTTP/1.1 connection (an HTTP/2 stream is
 * cancelled), so the rest costs nothing.
 */
export const MAX_ANSWER_BYTES = 64 * 1024;

/** The token for each request (TokenSource implements it: a token_file is re-read when it changes). */
export interface BearerToken {
  get(): string;
}

export interface EventsClientOptions {
  baseUrl: string;
  token: BearerToken;
  wait: boolean;
  http2: boolean;
  caFile: string | null;
  timeoutMs: number;
  maxConnections: number;
  /** The forward proxy on the way to baseUrl (src/config/proxy.ts); default: none. */
  route?: ProxyRoute;
  /** Mutual TLS: the client certificate and key; renew() swaps them. Default: none. */
  identity?: ClientIdentity | null;
}

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

export class EventsClient implements LongLived {
  private poolP: Promise<Dispatcher> | null = null;
  private readonly origin: string;
  private readonly basePath: string;
  private readonly ca: Buffer | undefined;
  private identity: ClientIdentity | null;
  /** Dispatchers replaced by renew(), finishing their requests, with their closing; close() waits for them, destroy() cuts them. */
  private readonly retiring = new Map<Promise<void>, Promise<Dispatcher>>();
  private ended: 'closed' | 'destroyed' | null = null;
  /** Names a TLS refusal (a client certificate refused) that undici reports as a closed socket. */
  private readonly tlsMemo = new TlsFailureMemo(() => this.identity !== null);

  constructor(private readonly opts: EventsClientOptions) {
    const url = new URL(opts.baseUrl);
    this.origin = url.origin;
    this.basePath = url.pathname.replace(/\/+$/, '');
    // Read now: a missing CA file is a start-up error, not a first-request one.
    this.ca = opts.caFile ? readKeyFileSync('api.ca_file', opts.caFile) : undefined;
    this.identity = opts.identity ?? null;
  }

  /** Load undici and create the connection pool now, without waiting for it. */
  warm(): void {
    void this.pool();
  }

  private pool(): Promise<Dispatcher> {
    this.poolP ??= loadUndiciParts().then((undici) =>
      createDispatcher(undici, this.origin, {
        route: this.opts.route ?? DIRECT,
        tls: { ...(this.ca ? { ca: this.ca } : {}), ...(this.identity ?? {}) },
        connections: this.opts.maxConnections,
        allowH2: this.opts.http2,
        timeoutMs: this.opts.timeoutMs,
        tlsMemo: this.tlsMemo,
      }),
    );
    return this.poolP;
  }

  /**
   * A new client certificate: later requests open new connections with it
   * (a TLS session cannot change its certificate); requests under way finish
   * on the old connections, which then close.
   */
  renew(identity: ClientIdentity | null): void {
    this.identity = identity;
    const old = this.poolP;
    this.poolP = null;
    if (!old || this.ended) return;
    const closing: Promise<void> = old
      .then((d) => (isDestroyed(d) ? undefined : d.close()))
      .catch(() => undefined)
      .finally(() => this.retiring.delete(closing));
    this.retiring.set(closing, old);
  }

  /** `cut` ends the request where it is (its sender is destroyed): an error outcome, code ABORTED. */
  async post(ds: string, body: Body, contentEncoding: string | null, cut?: AbortSignal): Promise<SendOutcome> {
    const pool = await this.pool();
    const query = `name=${encodeURIComponent(ds)}&wait=${this.opts.wait ? 'true' : 'false'}`;
    const token = this.opts.token.get();
    const headers: Record<string, string> = {
      authorization: `Bearer ${token}`,
      'content-type': 'application/x-ndjson',
    };
    if (contentEncoding) headers['content-encoding'] = contentEncoding;
    // A spilled body is read from its file while it is sent; undici checks that it is exactly content-length bytes.
    if (!Buffer.isBuffer(body)) headers['content-length'] = String(body.length);
    // (A byte stream of highWaterMark 1 reads one step ahead at most.)
    const payload = Buffer.isBuffer(body) ? body : Readable.from(body.chunks(), { objectMode: false, highWaterMark: 1 });
    const timeout = AbortSignal.timeout(this.opts.timeoutMs);
    const signal = cut ? AbortSignal.any([timeout, cut]) : timeout;
    try {
      const res = await untilAborted(pool.request({ origin: this.origin, method: 'POST', path: `${this.basePath}/v0/events?${query}`, headers, body: payload, signal }), signal);
      const { text, truncated } = await readBounded(res.body, MAX_ANSWER_BYTES);
      const h = (name: string) => {
        const v = res.headers[name];
        return Array.isArray(v) ? (v[0] ?? null) : (v ?? null);
      };
      return {
        kind: 'response',
        status: res.statusCode,
        retryAfter: h('retry-after'),
        rateLimitReset: h('x-ratelimit-reset'),
        location: withoutToken(h('location'), token),
        contentType: h('content-type'),
        body: withoutToken(text, token) ?? '',
        bodyTruncated: truncated,
      };
    } catch (err) {
      if (cut?.aborted && !timeout.aborted) return { kind: 'error', code: 'ABORTED', timeout: false, message: 'request cut: the sender was destroyed' };
      if (timeout.aborted) return { kind: 'error', code: 'TIMEOUT', timeout: true, message: `no answer within api.timeout_ms (${this.opts.timeoutMs} ms)` };
      return errorOutcome(this.tlsMemo.explain(err) ?? err, false);
    }
  }

  /** Requests under way are answered, then the connections close. Idempotent, also after destroy(). */
  async close(): Promise<void> {
    this.ended ??= 'closed';
    await Promise.all(this.retiring.keys());
    if (!this.poolP) return;
    const pool = await this.poolP;
    // undici refuses to close a destroyed pool; closing a closed one waits for it.
    if (!isDestroyed(pool)) await pool.close();
  }

  /** Requests under way end with an error, the connections are cut. Idempotent. */
  async destroy(): Promise<void> {
    this.ended = 'destroyed';
    if (this.poolP) await (await this.poolP).destroy();
    // Their requests end too, as a stop wants, instead of finishing.
    await Promise.all([...this.retiring.values()].map(async (d) => (await d).destroy().catch(() => undefined)));
    await Promise.all(this.retiring.keys());
  }
}

/**
 * undici acts on a request's signal only once the request has a connection:
 * one waiting for a connection that is never made (a proxy that accepts and
 * never answers the CONNECT) held its timeout, and a stop's cut, for
 * minutes. It ends here when the signal does; undici, seeing the signal
 * aborted when the connection comes, never sends it.
 */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function isDestroyed(d: Dispatcher): boolean {
  return (d as Dispatcher & { destroyed?: boolean }).destroyed === true;
}

/**
 * An answer's words with the token taken out: a hostile or broken server may
 * echo it (a Location to another host carrying it, an error body quoting the
 * Authorization header), and the Location and the body go to the log and to
 * `status`. As sent and percent-encoded; a token too short to be told from
 * ordinary words is left (config/redact.ts scrubs the same way).
 */
export function withoutToken<T extends string | null>(text: T, token: string): T {
  if (text === null || token.length < MIN_SECRET_LENGTH) return text;
  return scrub(text, [token, encodeURIComponent(token)]) as T;
}

/** A network failure as a value, keeping its cause (ECONNREFUSED, a certificate error by name, DNS). */
export function errorOutcome(err: unknown, aborted: boolean): SendOutcome {
  // The proxy, not the API: its own code (PROXY_407, PROXY_ECONNREFUSED) and the proxy named without its password.
  if (err instanceof ProxyFailure) return { kind: 'error', code: err.code, timeout: aborted, message: err.message };
  const e = err as { code?: string; name?: string; message?: string; cause?: { code?: string; message?: string } };
  // undici wraps connect failures: the errno code is on the cause.
  // Only a string is a code (a DOMException's `code` is a number).
  const code = [e.cause?.code, e.code, e.name].find((c): c is string => typeof c === 'string') ?? 'UNKNOWN';
  const message = e.cause?.message ?? e.message ?? String(err);
  return { kind: 'error', code, timeout: aborted || TIMEOUT_CODES.has(code) || TIMEOUT_CODES.has(e.code ?? ''), message };
}

/** Read at most `max` bytes of a body; past that destroy the stream (which aborts the request and frees its socket). */
export async function readBounded(body: AsyncIterable<Buffer> & { destroy(err?: Error): unknown }, max: number): Promise<{ text: string; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  for await (const chunk of body) {
    const room = max - size;
    if (chunk.length > room) {
      if (room > 0) chunks.push(chunk.subarray(0, room));
      size = max;
      truncated = true;
      break;
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  if (truncated) body.destroy();
  return { text: Buffer.concat(chunks, size).toString('utf8'), truncated };
}
