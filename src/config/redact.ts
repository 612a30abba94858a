// Secrets never leave the process: check-config output, problems and logs
// show `***` for api.token, clusters.token and the password in redis_url,
// api.base_url and api.proxy (in the userinfo or a query parameter).
import type { Config } from './types.js';

export const REDACTED = '***';

/** Query parameters whose values are secrets (ioredis reads `?password=`). */
const SECRET_PARAM = /pass|pwd|secret|token|key|auth|cred/i;

/**
 * `redis://user:secret@host` -> `redis://user:***@host`, and
 * `redis://host/0?password=secret` -> `redis://host/0?password=***`. A
 * userinfo without a colon (`redis://secret@host`) is redacted whole: some
 * clients read it as the password. Up to the last `@`, so an unencoded `@`
 * in the password cannot leak its tail; the query's secrets go first, so an
 * `@` in one of them cannot either (an `@` in another parameter hides more
 * than needed, never less).
 */
export function redactUrlPassword(url: string): string {
  const q = url.indexOf('?');
  const withQuery = q === -1 ? url : url.slice(0, q + 1) + redactQuery(url.slice(q + 1));
  // Without "scheme://" as written (a typo a URL parser forgives: "http:/u:pw@h",
  // "u:pw@h"), everything before the first colon is taken as the user.
  return withQuery.replace(/^(\s*[a-z][a-z0-9+.-]*:\/\/|)(.*)@/is, (_, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(':');
    return colon === -1 ? `${scheme}${REDACTED}@` : `${scheme}${userinfo.slice(0, colon)}:${REDACTED}@`;
  });
}

/** Names are tested as a URL parser reads them (`%70assword` is `password`). */
function redactQuery(query: string): string {
  return query.replace(/(^|[&;])([^&;=#]*)=([^&;#]*)/g, (all, sep: string, name: string) => (SECRET_PARAM.test(decodedName(name)) ? `${sep}${name}=${REDACTED}` : all));
}

function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replaceAll('+', ' '));
  } catch {
    // Not valid percent-encoding: a secret-looking name hidden in it is still caught undecoded.
    return name;
  }
}

/** Keys whose value a config line shows in a problem as `***` (a secret, or a key that may hold one, misspelt or not). */
const SECRET_KEY = /tok|secret|pass|pwd|key|auth|cred/i;

/**
 * A line of the config file fit for a problem (a YAML syntax error quotes
 * the line it is on): the value of a secret-looking key as `***`, and the
 * passwords of the URLs in it (redactUrlPassword).
 */
export function redactConfigLine(line: string): string {
  const kv = /^(\s*(?:-\s+)?["']?)([^"':#\s][^"':#]*?)(["']?\s*:\s+)(\S.*)$/.exec(line);
  if (kv && SECRET_KEY.test(kv[2]!)) return `${kv[1]}${kv[2]}${kv[3]}${REDACTED}`;
  return line.replace(/[a-z][a-z0-9+.-]*:\/\/[^\s"']+/gi, (url) => redactUrlPassword(url));
}

/** A copy of `config` fit to print; null secrets stay null. */
export function redactConfig(config: Readonly<Config>): Config {
  const copy = structuredClone(config) as Config;
  if (copy.api.token !== null) copy.api.token = REDACTED;
  if (copy.clusters.token !== null) copy.clusters.token = REDACTED;
  if (copy.limits.redis_url !== null) copy.limits.redis_url = redactUrlPassword(copy.limits.redis_url);
  // `https://user:password@host` would print its password.
  if (copy.api.base_url !== null) copy.api.base_url = redactUrlPassword(copy.api.base_url);
  // `http://user:password@proxy:3128`: the proxy's password is as secret as the token.
  if (copy.api.proxy) copy.api.proxy = redactUrlPassword(copy.api.proxy);
  return copy;
}

/** Keys whose value is a URL that may carry a password. */
const URL_KEYS = new Set(['limits.redis_url', 'api.base_url', 'api.proxy']);

/** A raw value fit for a problem message about `keyPath`. */
export function redactValue(keyPath: string, value: unknown): unknown {
  if (value === null || value === undefined || value === '') return value;
  if (keyPath === 'api.token' || keyPath === 'clusters.token') return REDACTED;
  if (URL_KEYS.has(keyPath) && typeof value === 'string') return redactUrlPassword(value);
  return value;
}

/** Names of variables whose values are taken for secrets when they are interpolated into any key. */
const SECRET_NAME = /TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|API_?KEY|PRIVATE/i;
/** Shorter values are not scrubbed from text (they would mangle ordinary words). */
export const MIN_SECRET_LENGTH = 6;

/**
 * Secret values that may have reached a typed key through `${VAR}`
 * (`batch.linger_ms: ${SPOOLSHIP_TOKEN}` once echoed the token in its
 * problem): the tokens' environment variables and every referenced variable
 * whose name says secret.
 */
export function secretValues(env: NodeJS.ProcessEnv, referenced: Iterable<string>): string[] {
  const names = new Set(['SPOOLSHIP_TOKEN', 'SPOOLSHIP_ADMIN_TOKEN', ...[...referenced].filter((n) => SECRET_NAME.test(n))]);
  const out = new Set<string>();
  for (const n of names) {
    const v = env[n];
    if (v && v.length >= MIN_SECRET_LENGTH) out.add(v);
  }
  return [...out];
}

/** `text` with every secret value replaced by ***. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.split(s).join(REDACTED);
  return out;
}

/** A problem's value with secret values scrubbed from its strings (deeply). */
export function scrubValue(value: unknown, secrets: readonly string[]): unknown {
  if (secrets.length === 0) return value;
  if (typeof value === 'string') return scrub(value, secrets);
  if (Array.isArray(value)) return value.map((v) => scrubValue(v, secrets));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrubValue(v, secrets)]));
  return value;
}
