// The effective configuration: the YAML file of docs/configuration.md after
// interpolation, env overrides, defaults and validation. Keys keep the YAML
// spelling so that a key in a log line, an error and the file are the same
// word. Sizes are resolved to bytes, durations are milliseconds. The object
// handed to the pipeline is deeply frozen.

export interface SourceRoute {
  /** Globs, resolved relative to the config file's directory. */
  include: string[];
  datasource: string;
}

export interface Config {
  api: {
    /** An http(s) URL without trailing slash, or "embedded" (in-process emulator); null: not set (commands that send refuse to start). */
    base_url: string | null;
    token: string | null;
    token_file: string | null;
    wait: boolean;
    http2: boolean;
    ca_file: string | null;
    client_cert_file: string | null;
    client_key_file: string | null;
    /** null: from HTTPS_PROXY / HTTP_PROXY / NO_PROXY; "": never; else the proxy URL. */
    proxy: string | null;
    timeout_ms: number;
  };
  spool: {
    dir: string;
    /** Absolute globs (or starting with **) of paths never read. */
    exclude: string[];
    follow_symlinks: 'inside' | 'any' | 'never';
    sources: SourceRoute[];
    start_at: 'beginning' | 'end';
    on_complete: 'keep' | 'delete';
    idle_ms: number;
    /** A file gone this long (not renamed, not readable) is forgotten; one back sooner continues where it was. */
    forget_after_ms: number;
    max_line_bytes: number;
  };
  state_dir: string;
  batch: {
    max_bytes: number;
    linger_ms: number;
    max_open_bytes: number;
  };
  validate: 'none' | 'json';
  compression: {
    codec: 'zstd' | 'gzip' | 'none';
    level: number;
    /** Compressions at once; auto: the CPUs this process may use. */
    threads: number | 'auto';
  };
  limits: {
    requests_per_second: number;
    budget_id: string | null;
    max_in_flight: number | 'auto';
    max_in_flight_cap: number;
    max_in_flight_bytes: number | 'auto';
    max_connections: number;
    redis_url: string | null;
    fallback_requests_per_second: number;
  };
  retry: {
    initial_ms: number;
    max_ms: number;
    multiplier: number;
  };
  queue: { max_bytes: number };
  dead_letter: { max_bytes: number };
  shutdown_timeout_ms: number;
  admin: {
    /** "host:port", or "" when the admin server is disabled. */
    listen: string;
  };
  clusters: {
    org: string | null;
    token: string | null;
  };
  log: {
    level: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
    format: 'auto' | 'json' | 'pretty';
  };
}

/** Where the effective config came from; kept beside it for reload and messages. */
export interface LoadedConfig {
  config: Readonly<Config>;
  /** Absolute path of the file read, or null when none was found and defaults apply. */
  file: string | null;
  /** Non-fatal findings, e.g. a SPOOLSHIP_* variable that names no key. */
  warnings: string[];
  /** Of `warnings`, those about SPOOLSHIP_* variables that name no key: every command that reads the config prints these. */
  envWarnings: string[];
  /** How `file` was chosen: -c, SPOOLSHIP_CONFIG, ./config, /etc, or none found. */
  source: 'flag' | 'env' | 'cwd' | 'system' | 'none';
  /** The files looked for, in lookup order, up to the one used. */
  searched: string[];
  /** Secret values interpolated into the file (or the token variables): never printed (check-config scrubs them). */
  secrets?: string[];
}
