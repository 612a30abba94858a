// The one config schema: every key of docs/configuration.md, declared once
// with its kind (validation, bounds), its default and one line of doc. The
// Config type (types.ts) and DEFAULTS (defaults.ts) are derived from it, the
// SPOOLSHIP_* overrides and check-config walk it; test/config/docs-table.test.ts
// holds docs/configuration.md's table to it. Cross-key rules live in
// cross-checks.ts. The order here is the order of the effective config
// printed by check-config.
//
// Adding a key: a line here (and a check in checks.ts if no field kind
// fits), its row in docs/configuration.md, then the code that reads it.
import { baseUrl, excludeGlobs, inFlight, listenAddress, proxyUrl, redisUrl, sources } from './checks.js';
import { absolutePath, autoOr, bool, duration, Field, int, key, number, oneOf, optionalString, requiredPath, requiredString, size } from './fields.js';
import { MAX_BATCH_BYTES, MAX_COMPRESSION_THREADS, MAX_CONNECTIONS, MIN_BATCH_BYTES } from './limits.js';

export interface Section {
  readonly [key: string]: SchemaNode;
}
export type SchemaNode = Field | Section;

const MB = 1000 * 1000;
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export const SCHEMA = {
  api: {
    base_url: key(optionalString('an http(s) URL or "embedded"', baseUrl), null, 'API host of the Workspace\'s region, or "embedded"; no default: commands that send refuse to start without it'),
    token: key(optionalString('a token'), null, 'DATASOURCE:APPEND (or CREATE) token; defaults to $SPOOLSHIP_TOKEN (env-overrides.ts)'),
    token_file: key(optionalString('a file path', absolutePath), null, 'file holding the token; re-read on SIGHUP and when it changes'),
    wait: key(bool(), true, 'send wait=true; false = fire-and-forget (202)'),
    http2: key(bool(), false, 'HTTP/2 over TLS (ALPN); HTTP/1.1 keep-alive pool otherwise'),
    ca_file: key(optionalString('a file path', absolutePath), null, 'extra CA bundle (PEM) to trust'),
    client_cert_file: key(optionalString('a file path', absolutePath), null, 'mutual TLS: client certificate (PEM), re-read like token_file'),
    client_key_file: key(optionalString('a file path', absolutePath), null, 'mutual TLS: client key (PEM), re-read like token_file'),
    proxy: key(proxyUrl(), null, 'forward proxy URL; null: HTTPS_PROXY / HTTP_PROXY / NO_PROXY as curl reads them; "": never'),
    timeout_ms: key(duration({ min: 1 }), 60_000, 'per request, headers and body'),
  },
  spool: {
    dir: key(requiredPath(), './spool', '<dir>/<datasource>/*.ndjson -> Data Source <datasource>; relative to the working directory'),
    exclude: key(excludeGlobs(), [], 'globs of paths never read'),
    follow_symlinks: key(oneOf(['inside', 'any', 'never']), 'inside', 'where a symlink in the spool may point'),
    sources: key(sources(), [], 'extra routes: [{ include: [glob, ...], datasource: NAME }]'),
    start_at: key(oneOf(['beginning', 'end']), 'beginning', 'where files first seen at start-up are read from'),
    on_complete: key(oneOf(['keep', 'delete']), 'keep', 'what happens to a fully acknowledged rotated file'),
    idle_ms: key(duration({ min: 1 }), 30_000, 'a file not grown this long is idle (renamed away: finished)'),
    forget_after_ms: key(duration({ min: 0 }), 10 * 60 * 1000, 'a file gone this long is forgotten; one back sooner continues where it was'),
    max_line_bytes: key(size({ min: 1 }), 10 * MB, 'longest line, excluding the newline; longer ones go to dead letters'),
  },
  state_dir: key(requiredPath(), './state', 'checkpoints, retry queue, dead letters, lock; relative to the working directory'),
  batch: {
    max_bytes: key(size({ min: MIN_BATCH_BYTES, max: MAX_BATCH_BYTES, maxWhy: "the Events API's request limit on paid plans (10MB on others)" }), 10 * MB, 'uncompressed request body'),
    linger_ms: key(duration({ min: 0 }), 1000, 'send a partial batch after this long'),
    max_open_bytes: key(size({ min: 1 }), 64 * MiB, 'all open (unsent) batches together'),
  },
  validate: key(oneOf(['none', 'json']), 'none', 'json: lines that are not JSON objects go to dead letters'),
  compression: {
    codec: key(oneOf(['zstd', 'gzip', 'none']), 'zstd', 'Content-Encoding of the bodies'),
    level: key(int({ min: 0 }), 3, "the codec's level"),
    threads: key(autoOr(int({ min: 1, max: MAX_COMPRESSION_THREADS, unit: '(the most libuv runs at once)' })), 'auto', 'compressions at once (parts of a zstd batch, whole gzip batches); auto: the CPUs this process may use (codec/threads.ts)'),
  },
  limits: {
    requests_per_second: key(int({ min: 1 }), 100, "requests in any sliding 1 s window per budget (the platform's Events API limit)"),
    budget_id: key(optionalString('a budget name'), null, 'agents with the same budget_id and redis_url share one budget'),
    max_in_flight: key(inFlight(), 'auto', 'concurrent requests: auto (adaptive, sender/concurrency.ts) or a number'),
    max_in_flight_cap: key(int({ min: 1 }), 200, 'the most auto may reach: 100 req/s x 2 s answers'),
    max_in_flight_bytes: key(autoOr(size({ min: 1 })), 'auto', "compressed bodies in flight together; auto: the cap x the bodies' mean size, at most 1 GiB"),
    max_connections: key(int({ min: 1, max: MAX_CONNECTIONS, unit: '(the platform allows 250 connections per IP address)' }), 200, 'sockets to the API host'),
    redis_url: key(optionalString('a redis:// or rediss:// URL', redisUrl), null, 'share the budget across agents through Redis; redis://user:password@ (ACL), rediss:// (TLS)'),
    redis_ca_file: key(optionalString('a file path', absolutePath), null, 'extra CA bundle (PEM) to trust for a rediss:// redis_url'),
    fallback_requests_per_second: key(int({ min: 1 }), 10, 'local budget while Redis is unreachable'),
  },
  retry: {
    initial_ms: key(duration({ min: 1 }), 500, 'first backoff'),
    max_ms: key(duration({ min: 1 }), 60_000, 'longest backoff'),
    multiplier: key(number({ min: 1 }), 2, 'backoff growth (full jitter; Retry-After wins)'),
  },
  queue: { max_bytes: key(size({ min: 1 }), GiB, 'disk-backed retry queue; when full the reader pauses') },
  dead_letter: { max_bytes: key(size({ min: 1 }), GiB, 'dead-letter store; when full new dead letters are dropped and counted') },
  shutdown_timeout_ms: key(duration({ min: 0 }), 25_000, "SIGTERM's drain, inside Kubernetes' default 30 s grace"),
  admin: { listen: key(requiredString('host:port or ""', listenAddress), '127.0.0.1:9464', '/metrics /healthz /readyz /status; "" disables') },
  clusters: {
    org: key(optionalString('an organization id'), null, 'organization id for spoolship clusters'),
    token: key(optionalString('a token'), null, 'org-admin token for spoolship clusters; defaults to $SPOOLSHIP_ADMIN_TOKEN'),
  },
  log: {
    level: key(oneOf(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']), 'info', 'log level'),
    format: key(oneOf(['auto', 'json', 'pretty']), 'auto', 'auto: pretty on a TTY, json otherwise'),
  },
} satisfies Section;

/** The effective value type of a schema node: a Field's parse result, or a section of them. */
export type Effective<S> = S extends Field<infer T> ? T : { -readonly [K in keyof S]: Effective<S[K]> };

/** The defaults of every key, in effective form, from the schema. */
export function defaultsOf(node: Section = SCHEMA): Record<string, unknown> {
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, v instanceof Field ? v.defaultValue : defaultsOf(v)]));
}

/** Dotted paths of every key, e.g. `api.base_url`, `state_dir`. */
export function keyPaths(node: Section = SCHEMA, prefix = ''): string[] {
  return Object.entries(node).flatMap(([k, v]) => {
    const p = prefix ? `${prefix}.${k}` : k;
    return v instanceof Field ? [p] : keyPaths(v, p);
  });
}

/** Dotted paths of the sections, e.g. `api`, `limits`. */
export function sectionPaths(): string[] {
  return Object.entries(SCHEMA)
    .filter(([, v]) => !(v instanceof Field))
    .map(([k]) => k);
}
