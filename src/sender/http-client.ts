// Sends one Events API request and reports what happened as a value. It
// never retries (the RetryPolicy is the one retry owner) and never throws for
// an HTTP status or a network fault.
import { readFileSync } from 'node:fs';
import { Pool } from 'undici';

export type SendOutcome =
  | { kind: 'response'; status: number; retryAfter: string | null; rateLimitReset: string | null; body: string }
  | { kind: 'error'; code: string; timeout: boolean };

export interface EventsClientOptions {
  baseUrl: string;
  token: () => string;
  wait: boolean;
  http2: boolean;
  caFile: string | null;
  timeoutMs: number;
  maxConnections: number;
}

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

export class EventsClient {
  private readonly pool: Pool;
  private readonly basePath: string;

  constructor(private readonly opts: EventsClientOptions) {
    const url = new URL(opts.baseUrl);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.pool = new Pool(url.origin, {
      connections: opts.maxConnections,
      allowH2: opts.http2,
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
      connect: opts.caFile ? { ca: readFileSync(opts.caFile) } : undefined,
    });
  }

  async post(ds: string, body: Buffer, contentEncoding: string | null): Promise<SendOutcome> {
    const query = `name=${encodeURIComponent(ds)}&wait=${this.opts.wait ? 'true' : 'false'}`;
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.opts.token()}`,
      'content-type': 'application/x-ndjson',
    };
    if (contentEncoding) headers['content-encoding'] = contentEncoding;
    const signal = AbortSignal.timeout(this.opts.timeoutMs);
    try {
      const res = await this.pool.request({ method: 'POST', path: `${this.basePath}/v0/events?${query}`, headers, body, signal });
      const text = await res.body.text();
      const h = (name: string) => {
        const v = res.headers[name];
        return Array.isArray(v) ? (v[0] ?? null) : (v ?? null);
      };
      return { kind: 'response', status: res.statusCode, retryAfter: h('retry-after'), rateLimitReset: h('x-ratelimit-reset'), body: text };
    } catch (err) {
      const code = (err as { code?: string }).code ?? (err as Error).name ?? 'UNKNOWN';
      return { kind: 'error', code, timeout: signal.aborted || TIMEOUT_CODES.has(code) };
    }
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  async destroy(): Promise<void> {
    await this.pool.destroy();
  }
}
