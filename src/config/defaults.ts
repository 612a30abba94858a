// The defaults of docs/configuration.md, in effective form (bytes, milliseconds).
// `api.token` and `clusters.token` default to SPOOLSHIP_TOKEN and
// SPOOLSHIP_ADMIN_TOKEN (see env-defaults.ts); null here.
import type { Config } from './types.js';

export const DEFAULTS: Config = {
  api: {
    base_url: null, // no default: a token never goes to a host nobody chose (run, send, replay and check-config require it)
    token: null,
    token_file: null,
    wait: true,
    http2: false,
    ca_file: null,
    client_cert_file: null, // mutual TLS: certificate and key (PEM), re-read like token_file
    client_key_file: null,
    proxy: null, // null: HTTPS_PROXY / HTTP_PROXY / NO_PROXY as curl reads them; "": never
    timeout_ms: 60_000, // 60 s per request, headers and body
  },
  spool: {
    dir: './spool', // resolved against the working directory
    exclude: [], // globs of paths never read
    follow_symlinks: 'inside', // inside | any | never: where a symlink in the spool may point
    sources: [],
    start_at: 'beginning',
    on_complete: 'keep',
    idle_ms: 30_000, // 30 s
    forget_after_ms: 10 * 60 * 1000, // 10 min: a file gone this long is forgotten
    max_line_bytes: 10 * 1000 * 1000, // 10 MB, excluding the newline
  },
  state_dir: './state', // resolved against the working directory
  batch: {
    max_bytes: 10 * 1000 * 1000, // 10 MB, uncompressed (the platform's request limit)
    linger_ms: 1000, // 1 s
    max_open_bytes: 64 * 1024 * 1024, // 64 MiB, all open batches together
  },
  validate: 'none',
  compression: {
    codec: 'zstd',
    level: 3,
    threads: 'auto', // the CPUs this process may use (codec/threads.ts)
  },
  limits: {
    requests_per_second: 100, // the platform's Events API limit per organization
    budget_id: null,
    max_in_flight: 'auto', // adaptive concurrency (sender/concurrency.ts), or a fixed number
    max_in_flight_cap: 200, // the most auto may reach: 100 req/s x 2 s answers
    max_in_flight_bytes: 'auto', // what the cap needs at the bodies' observed size, at most MAX_AUTO_IN_FLIGHT_BYTES
    max_connections: 200, // sockets to the API host (the platform allows 250 per IP)
    redis_url: null,
    fallback_requests_per_second: 10,
  },
  retry: {
    initial_ms: 500,
    max_ms: 60_000, // 60 s
    multiplier: 2,
  },
  queue: { max_bytes: 1024 * 1024 * 1024 }, // 1 GiB on disk
  dead_letter: { max_bytes: 1024 * 1024 * 1024 }, // 1 GiB on disk
  shutdown_timeout_ms: 25_000, // 25 s: inside Kubernetes' default 30 s grace period
  admin: { listen: '127.0.0.1:9464' },
  clusters: { org: null, token: null },
  log: { level: 'info', format: 'auto' },
};

/** The last place the lookup tries (docs/configuration.md). */
export const SYSTEM_CONFIG_FILE = '/etc/spoolship/spoolship.yaml';
/** Relative to the working directory. */
export const CWD_CONFIG_FILE = 'config/spoolship.yaml';

/** The platform's Events API request limit on paid plans (uncompressed body). */
export const MAX_BATCH_BYTES = 100 * 1000 * 1000; // 100 MB
export const MIN_BATCH_BYTES = 1000; // 1 KB
/** The platform allows 250 sockets per IP address and region. */
export const MAX_CONNECTIONS = 250;
/** `max_in_flight_bytes: auto` never passes this (bodies beyond a small in-memory share wait on disk). */
export const MAX_AUTO_IN_FLIGHT_BYTES = 1024 * 1024 * 1024; // 1 GiB
/** libuv runs at most 1024 threads (UV_THREADPOOL_SIZE's ceiling). */
export const MAX_COMPRESSION_THREADS = 1024;
