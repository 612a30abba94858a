// The configuration system's public surface. Nothing below src/config reads
// process.env: callers pass `env` in, and get a deeply frozen Config back.
export { loadConfig, resolveConfig, TOKEN_KEYS, type LoadConfigOptions, type ResolveOptions } from './load.js';
export { locateConfig, type ConfigSource, type Located } from './locate.js';
export { redactConfig, redactUrlPassword, REDACTED } from './redact.js';
export { parseSize, parseDuration, formatBytes } from './units.js';
export { envNameFor, RESERVED_ENV } from './env-overrides.js';
export { restartRequiredChanges, RESTART_ONLY_KEYS } from './reload.js';
export { DEFAULTS, SYSTEM_CONFIG_FILE } from './defaults.js';
export type { Config, LoadedConfig, SourceRoute } from './types.js';
