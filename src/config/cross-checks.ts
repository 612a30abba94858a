// Rules between keys, run after each key passed its own check (a key that
// failed is skipped here, so one mistake is reported once).
import { existsSync } from 'node:fs';
import { CODEC_LEVELS } from '../codec/levels.js';
import type { ConfigProblem } from '../errors.js';
import type { Origins } from './raw.js';
import type { Config } from './types.js';
import { formatBytes } from './units.js';
import { tokenCharProblem } from '../util/token-chars.js';

export interface CrossResult {
  problems: ConfigProblem[];
  warnings: string[];
}

type Usable = (...keyPaths: string[]) => boolean;

/**
 * `tokenRequired`: the command sends (run, send, dead-letter replay) or checks
 * for one that does (check-config): no token is a problem, as the default (src/config/defaults.ts)
 * `token: ${SPOOLSHIP_TOKEN}` with the variable unset is; elsewhere a warning.
 */
export function crossCheck(c: Config, failed: ReadonlySet<string>, origins: Origins, tokenRequired = false): CrossResult {
  const usable: Usable = (...paths) => paths.every((p) => !failed.has(p));
  const noToken = usable('api.base_url', 'api.token', 'api.token_file') && c.api.base_url !== null && c.api.base_url !== 'embedded' && c.api.token === null && c.api.token_file === null;
  const out = { problems: problems(c, usable, origins), warnings: warnings(c, usable) };
  if (tokenRequired && usable('api.base_url') && c.api.base_url === null) out.problems.unshift({ path: 'api.base_url', value: null, why: NO_BASE_URL });
  if (noToken && tokenRequired) out.problems.unshift({ path: 'api.token', value: null, why: `${NO_TOKEN}: set api.token, api.token_file or the SPOOLSHIP_TOKEN environment variable (not set)` });
  else if (noToken) out.warnings.push(`${NO_TOKEN}: set api.token, api.token_file or SPOOLSHIP_TOKEN; the Events API answers 401 without one`);
  return out;
}

const NO_TOKEN = 'no API token';
/** Shared with apiBaseUrl (config/index.ts): the same words wherever the key is missing. */
export const NO_BASE_URL =
  "not set, and it has no default (the token must not go to a host nobody chose): set it to your Workspace's region API host " +
  '(e.g. https://api.tinybird.co, https://api.us-east.tinybird.co), "embedded" for the in-process emulator, or SPOOLSHIP_API__BASE_URL';

function problems(c: Config, usable: Usable, origins: Origins): ConfigProblem[] {
  const out: ConfigProblem[] = [];
  const problem = (path: string, value: unknown, why: string) => out.push({ path, value, why });
  for (const [key, token] of [['api.token', c.api.token], ['clusters.token', c.clusters.token]] as const) {
    const why = token !== null && usable(key) ? tokenCharProblem(token) : null;
    if (why) problem(key, '***', why);
  }
  if (usable('api.token', 'api.token_file') && c.api.token !== null && c.api.token_file !== null) {
    const by = origins.has('api.token') ? ` (set by ${origins.get('api.token')})` : '';
    problem('api.token_file', c.api.token_file, `api.token is set too${by}; set only one: token_file (re-read on SIGHUP and when it changes) or token`);
  }
  if (usable('batch.max_open_bytes', 'batch.max_bytes') && c.batch.max_open_bytes < c.batch.max_bytes) {
    problem('batch.max_open_bytes', c.batch.max_open_bytes, `must be >= batch.max_bytes (${formatBytes(c.batch.max_bytes)}): open batches must fit at least one full batch`);
  }
  if (usable('queue.max_bytes', 'batch.max_bytes') && c.queue.max_bytes < c.batch.max_bytes) {
    problem('queue.max_bytes', c.queue.max_bytes, `must be >= batch.max_bytes (${formatBytes(c.batch.max_bytes)}): the retry queue must hold at least one batch`);
  }
  if (usable('retry.initial_ms', 'retry.max_ms') && c.retry.initial_ms > c.retry.max_ms) {
    problem('retry.initial_ms', c.retry.initial_ms, `must be <= retry.max_ms (${c.retry.max_ms})`);
  }
  if (usable('compression.codec', 'compression.level')) {
    const { min, max } = CODEC_LEVELS[c.compression.codec];
    if (c.compression.level < min || c.compression.level > max) {
      problem('compression.level', c.compression.level, `must be ${min}..${max} for ${c.compression.codec}`);
    }
  }
  if (usable('api.http2', 'api.base_url') && c.api.http2 && c.api.base_url !== null && !c.api.base_url.startsWith('https://')) {
    problem('api.http2', true, 'HTTP/2 needs TLS (ALPN): use an https:// api.base_url, or set http2: false');
  }
  return out;
}

function warnings(c: Config, usable: Usable): string[] {
  const out: string[] = [];
  if (usable('spool.max_line_bytes', 'batch.max_bytes') && c.spool.max_line_bytes > c.batch.max_bytes) {
    // A warning, not a problem: lowering batch.max_bytes alone is a normal edit.
    out.push(
      `spool.max_line_bytes (${formatBytes(c.spool.max_line_bytes)}) is above batch.max_bytes (${formatBytes(c.batch.max_bytes)}): ` +
        'a line longer than a batch cannot be sent and goes to dead letters (line_too_long); set spool.max_line_bytes <= batch.max_bytes to say so explicitly',
    );
  }
  if (usable('limits.requests_per_second', 'limits.fallback_requests_per_second') && c.limits.fallback_requests_per_second > c.limits.requests_per_second) {
    out.push(
      `limits.fallback_requests_per_second (${c.limits.fallback_requests_per_second}) is above limits.requests_per_second (${c.limits.requests_per_second}); ` +
        'while Redis is down each agent would send more than the shared budget',
    );
  }
  if (usable('api.client_cert_file', 'api.client_key_file') && (c.api.client_cert_file === null) !== (c.api.client_key_file === null)) {
    const [set, unset] = c.api.client_cert_file === null ? ['client_key_file', 'client_cert_file'] : ['client_cert_file', 'client_key_file'];
    out.push(`api.${set} is set but api.${unset} is not: mutual TLS needs both; no client certificate is sent until both are set`);
  }
  if (usable('api.base_url', 'api.token', 'api.token_file')) out.push(...apiWarnings(c));
  // auto stays within max_connections by itself; HTTP/2 carries many requests on one connection.
  const fixed = c.limits.max_in_flight;
  if (usable('limits.max_in_flight', 'limits.max_connections', 'api.http2') && fixed !== 'auto' && !c.api.http2 && fixed > c.limits.max_connections) {
    out.push(
      `limits.max_in_flight (${fixed}) is above limits.max_connections (${c.limits.max_connections}): over HTTP/1.1 each request in flight needs its own connection, ` +
        `so at most ${c.limits.max_connections} go at once and the rest wait; raise limits.max_connections or lower limits.max_in_flight`,
    );
  }
  const files: Array<[string, string | null]> = [
    ...(['token_file', 'ca_file', 'client_cert_file', 'client_key_file'] as const).map((k): [string, string | null] => [`api.${k}`, c.api[k]]),
    ['limits.redis_ca_file', c.limits.redis_ca_file],
  ];
  for (const [key, file] of files) {
    if (file !== null && usable(key) && !existsSync(file)) out.push(`${key}: ${file} does not exist (yet); the agent reads it at start-up and on SIGHUP`);
  }
  return out;
}

function apiWarnings(c: Config): string[] {
  if (c.api.base_url === null || c.api.base_url === 'embedded') return [];
  const out: string[] = [];
  if (/\/v0$/.test(c.api.base_url)) out.push('api.base_url ends in /v0; spoolship adds /v0/events itself, so give the host only');
  return out;
}
