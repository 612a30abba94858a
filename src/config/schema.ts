// The one config schema: every key of docs/configuration.md and the kind of value it
// takes. Defaults live in defaults.ts; cross-key rules in cross-checks.ts.
// The order here is the order of the effective config printed by check-config.
import { baseUrl, excludeGlobs, inFlight, listenAddress, proxyUrl, redisUrl, sources } from './checks.js';
import { absolutePath, autoOr, bool, duration, Field, int, number, oneOf, optionalString, requiredPath, requiredString, size } from './fields.js';
import { MAX_BATCH_BYTES, MAX_COMPRESSION_THREADS, MAX_CONNECTIONS, MIN_BATCH_BYTES } from './defaults.js';

export interface Section {
  readonly [key: string]: SchemaNode;
}
export type SchemaNode = Field | Section;

export const SCHEMA: Section = {
  api: {
    base_url: optionalString('an http(s) URL or "embedded"', baseUrl),
    token: optionalString('a token'),
    token_file: optionalString('a file path', absolutePath),
    wait: bool(),
    http2: bool(),
    ca_file: optionalString('a file path', absolutePath),
    client_cert_file: optionalString('a file path', absolutePath),
    client_key_file: optionalString('a file path', absolutePath),
    proxy: proxyUrl(),
    timeout_ms: duration({ min: 1 }),
  },
  spool: {
    dir: requiredPath(),
    exclude: excludeGlobs(),
    follow_symlinks: oneOf(['inside', 'any', 'never']),
    sources: sources(),
    start_at: oneOf(['beginning', 'end']),
    on_complete: oneOf(['keep', 'delete']),
    idle_ms: duration({ min: 1 }),
    forget_after_ms: duration({ min: 0 }),
    max_line_bytes: size({ min: 1 }),
  },
  state_dir: requiredPath(),
  batch: {
    max_bytes: size({ min: MIN_BATCH_BYTES, max: MAX_BATCH_BYTES, maxWhy: "the Events API's request limit on paid plans (10MB on others)" }),
    linger_ms: duration({ min: 0 }),
    max_open_bytes: size({ min: 1 }),
  },
  validate: oneOf(['none', 'json']),
  compression: {
    codec: oneOf(['zstd', 'gzip', 'none']),
    level: int({ min: 0 }),
    threads: autoOr(int({ min: 1, max: MAX_COMPRESSION_THREADS, unit: '(the most libuv runs at once)' })),
  },
  limits: {
    requests_per_second: int({ min: 1 }),
    budget_id: optionalString('a budget name'),
    max_in_flight: inFlight(),
    max_in_flight_cap: int({ min: 1 }),
    max_in_flight_bytes: autoOr(size({ min: 1 })),
    max_connections: int({ min: 1, max: MAX_CONNECTIONS, unit: '(the platform allows 250 connections per IP address)' }),
    redis_url: optionalString('a redis:// or rediss:// URL', redisUrl),
    fallback_requests_per_second: int({ min: 1 }),
  },
  retry: {
    initial_ms: duration({ min: 1 }),
    max_ms: duration({ min: 1 }),
    multiplier: number({ min: 1 }),
  },
  queue: { max_bytes: size({ min: 1 }) },
  dead_letter: { max_bytes: size({ min: 1 }) },
  shutdown_timeout_ms: duration({ min: 0 }),
  admin: { listen: requiredString('host:port or ""', listenAddress) },
  clusters: {
    org: optionalString('an organization id'),
    token: optionalString('a token'),
  },
  log: {
    level: oneOf(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']),
    format: oneOf(['auto', 'json', 'pretty']),
  },
};

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
