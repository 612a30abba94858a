// Checks of single string values that need more than a type: URLs, listen
// addresses, Data Source names, the spool.sources routes.
import path from 'node:path';
import { bad, Field, ok, textOf, type Parsed, type SubProblem } from './fields.js';
import { isPlainObject, plain, TypedScalar, valueOf } from './raw.js';
import { closest } from './suggest.js';
import { isDataSourceName } from '../util/datasource-name.js';

/**
 * The scheme and `//` exactly as written, nothing before them: a URL parser
 * reads "http:/u:pw@host" and " http://..." as good URLs, but a typo there is
 * a typo, and the places that hide a password look for "scheme://".
 */
function startsAs(s: string, schemes: readonly string[]): boolean {
  return schemes.some((scheme) => s.slice(0, scheme.length + 3).toLowerCase() === `${scheme}://`);
}

export function baseUrl(s: string): Parsed<string> {
  if (s === 'embedded') return ok(s);
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return bad('must be an http(s) URL such as https://api.example.com, or "embedded" for the in-process emulator');
  }
  if (!startsAs(s, ['https', 'http'])) return bad('must start with https:// or http://, or be "embedded"');
  if (u.search || u.hash) return bad('must not have a query or fragment; give the API host only, e.g. https://api.example.com');
  if (u.username || u.password) return bad('must not carry credentials; put the token in api.token or api.token_file');
  // A trailing slash would give "//v0/events" once the sender appends its path.
  return ok(s.replace(/\/+$/, ''));
}

const LISTEN_RE = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):([0-9]{1,5})$/;

export function listenAddress(s: string): Parsed<string> {
  if (s === '') return ok(s);
  const m = LISTEN_RE.exec(s);
  if (!m || Number(m[3]) > 65535) {
    return bad('must be host:port (127.0.0.1:9464, 0.0.0.0:9464, [::1]:9464), or "" to disable the admin server');
  }
  return ok(s);
}

/**
 * api.proxy: null (from the environment as curl reads it), "" (never), or
 * http(s)://[user:password@]host:port. Kept as written: the password is
 * redacted only where it is shown.
 */
export function proxyUrl(): Field<string | null> {
  return new Field('an http(s)://[user:password@]host:port URL, "" (never) or null (from HTTPS_PROXY and the like)', (raw) => {
    const s = textOf(raw);
    if (s === undefined) return bad('expected a proxy URL such as http://proxy.internal:3128, "" for no proxy, or null');
    if (s === null || s === '') return ok(s);
    let u: URL;
    try {
      u = new URL(s);
    } catch {
      return bad('must be a URL such as http://proxy.internal:3128 (percent-encode special characters in the password), "" for no proxy, or null');
    }
    if (!startsAs(s, ['http', 'https'])) return bad('must start with http:// or https:// (the proxy itself; the API stays https through it)');
    if (!u.hostname) return bad('has no host; e.g. http://proxy.internal:3128');
    if (u.pathname !== '/' || u.search || u.hash) return bad('must be a proxy address only (scheme, host, port), without a path');
    return ok(s);
  });
}

export function redisUrl(s: string): Parsed<string> {
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return bad('must be a URL such as redis://redis:6379 or rediss://:PASSWORD@redis:6380 (percent-encode special characters in the password)');
  }
  if (!startsAs(s, ['redis', 'rediss'])) return bad('must start with redis:// or rediss:// (TLS)');
  if (!u.hostname) return bad('has no host; e.g. redis://redis:6379');
  return ok(s);
}

export interface SourceRoute {
  /** Globs, resolved relative to the config file's directory. */
  include: string[];
  datasource: string;
}

const SOURCE_KEYS = ['include', 'datasource'];

type Report = (at: string, value: unknown, why: string) => void;

/**
 * spool.sources: a list of `{ include: [glob, ...], datasource: NAME }`.
 * Problems inside an entry carry their own sub-path (`[1].datasource`).
 */
export function sources(): Field<SourceRoute[]> {
  return new Field('list of { include: [glob, ...], datasource: NAME }', (raw, ctx) => {
    if (raw === null) return ok([]);
    if (!Array.isArray(raw)) return bad('expected a list of { include: [glob, ...], datasource: NAME }, or []');
    const routes: SourceRoute[] = [];
    const sub: SubProblem[] = [];
    const report: Report = (at, value, why) => sub.push({ at, value, why });
    raw.forEach((entry, i) => {
      const route = sourceRoute(entry, `[${i}]`, ctx.baseDir, report);
      if (route) routes.push(route);
    });
    return sub.length === 0 ? ok(routes) : { ok: false, why: '', sub };
  });
}

function sourceRoute(
  entry: unknown,
  at: string,
  baseDir: string,
  report: Report,
): SourceRoute | null {
  if (!isPlainObject(entry)) {
    report(at, plain(entry), 'expected a mapping { include: [glob, ...], datasource: NAME }');
    return null;
  }
  let fine = true;
  for (const key of Object.keys(entry)) {
    if (SOURCE_KEYS.includes(key)) continue;
    const hint = closest(key, SOURCE_KEYS);
    report(`${at}.${key}`, plain(entry[key]), `unknown key${hint ? `; did you mean ${hint}?` : '; a source has only include and datasource'}`);
    fine = false;
  }
  const name = textOf(entry.datasource);
  if (typeof name !== 'string' || !isDataSourceName(name)) {
    report(`${at}.datasource`, plain(entry.datasource), 'must be a Data Source name: letters, digits and _, not starting with a digit, at most 255 characters');
    fine = false;
  }
  // A single glob is accepted as a one-element list.
  const rawInclude = typeof entry.include === 'string' ? [entry.include] : entry.include;
  const include: string[] = [];
  if (!Array.isArray(rawInclude) || rawInclude.length === 0) {
    report(`${at}.include`, plain(entry.include), 'must be a non-empty list of globs, e.g. ["/var/log/app/*.ndjson"]');
    fine = false;
  } else {
    rawInclude.forEach((g, j) => {
      const s = textOf(g);
      if (typeof s !== 'string' || s.trim() === '') {
        report(`${at}.include[${j}]`, plain(g), 'must be a glob string, e.g. "/var/log/app/*.ndjson"');
        fine = false;
      } else include.push(path.resolve(baseDir, s));
    });
  }
  return fine ? { include, datasource: name as string } : null;
}

/**
 * spool.exclude: globs of paths never read. Matched against absolute paths;
 * a relative glob is resolved from the config file's directory (as sources
 * are), except one that starts with `**`, which matches anywhere (what
 * "**\/*.tmp" means to a user of any other shipper).
 */
export function excludeGlobs(): Field<string[]> {
  return new Field('list of globs', (raw, ctx) => {
    if (raw === null) return ok([]);
    // A single glob is accepted as a one-element list.
    const list: unknown[] = Array.isArray(raw) ? raw : [raw];
    const out: string[] = [];
    const sub: SubProblem[] = [];
    list.forEach((g, i) => {
      const s = textOf(g);
      // An unquoted 1 or true is a number or a boolean in YAML, not a name: most likely a slip.
      const scalar = g instanceof TypedScalar && typeof g.value !== 'string' ? ` (quote it, "${g.text}", if a file is named so)` : '';
      if (typeof s !== 'string' || s.trim() === '' || scalar) sub.push({ at: `[${i}]`, value: plain(g), why: `must be a glob string, e.g. "**/*.tmp"${scalar}` });
      else out.push(s.startsWith('**') ? s : path.resolve(ctx.baseDir, s));
    });
    return sub.length === 0 ? ok(out) : { ok: false, why: '', sub };
  });
}

/** limits.max_in_flight: `auto` (the agent finds its concurrency) or a positive integer. */
export function inFlight(): Field<number | 'auto'> {
  return new Field('auto or a positive integer', (raw) => {
    const v = valueOf(raw);
    if (typeof v === 'string' && v.trim() === 'auto') return ok<number | 'auto'>('auto');
    const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : NaN;
    if (Number.isSafeInteger(n) && n >= 1) return ok<number | 'auto'>(n);
    return bad('expected auto (adaptive, the default) or a positive integer');
  });
}
