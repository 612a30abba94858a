// The configuration system's public surface. Nothing below src/config reads
// process.env: callers pass `env` in, and get a deeply frozen Config back.
export { loadConfig, resolveConfig, NETWORK_KEYS, ONE_SHOT_UNUSED_KEYS, type LoadConfigOptions, type ResolveOptions } from './load.js';
export { locateConfig, type ConfigSource, type Located } from './locate.js';
export { redactConfig, redactUrlPassword, REDACTED } from './redact.js';
export { parseSize, parseDuration, formatBytes } from './units.js';
export { envNameFor, RESERVED_ENV } from './env-overrides.js';
export { restartRequiredChanges, RESTART_ONLY_KEYS } from './reload.js';
export { DEFAULTS, SYSTEM_CONFIG_FILE } from './defaults.js';
export type { Config, LoadedConfig, SourceRoute } from './types.js';

import { ConfigError } from '../errors.js';
import { NO_BASE_URL } from './cross-checks.js';
import type { Config } from './types.js';

/**
 * api.base_url for a command that sends. Loading with `tokenRequired` already
 * refuses a config without it; this says the same where a config was built
 * some other way, instead of sending to "null".
 */
export function apiBaseUrl(c: Readonly<Config>): string {
  if (c.api.base_url === null) throw new ConfigError([{ path: 'api.base_url', value: null, why: NO_BASE_URL }]);
  return c.api.base_url;
}
