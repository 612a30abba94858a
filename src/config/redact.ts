// Secrets never leave the process: check-config output, problems and logs
// show `***` for api.token, clusters.token and the password in redis_url and
// api.base_url.
import type { Config } from './types.js';

export const REDACTED = '***';

/**
 * `redis://user:secret@host` -> `redis://user:***@host`. A userinfo without
 * a colon (`redis://secret@host`) is redacted whole: some clients read it
 * as the password. Up to the last `@`, so an unencoded `@` in the password
 * cannot leak its tail.
 */
export function redactUrlPassword(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)(.*)@/is, (_, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(':');
    return colon === -1 ? `${scheme}${REDACTED}@` : `${scheme}${userinfo.slice(0, colon)}:${REDACTED}@`;
  });
}

/** A copy of `config` fit to print; null secrets stay null. */
export function redactConfig(config: Readonly<Config>): Config {
  const copy = structuredClone(config) as Config;
  if (copy.api.token !== null) copy.api.token = REDACTED;
  if (copy.clusters.token !== null) copy.clusters.token = REDACTED;
  if (copy.limits.redis_url !== null) copy.limits.redis_url = redactUrlPassword(copy.limits.redis_url);
  // `https://user:password@host` would print its password.
  copy.api.base_url = redactUrlPassword(copy.api.base_url);
  return copy;
}

/** A raw value fit for a problem message about `keyPath`. */
export function redactValue(keyPath: string, value: unknown): unknown {
  if (value === null || value === undefined || value === '') return value;
  if (keyPath === 'api.token' || keyPath === 'clusters.token') return REDACTED;
  if ((keyPath === 'limits.redis_url' || keyPath === 'api.base_url') && typeof value === 'string') return redactUrlPassword(value);
  return value;
}
