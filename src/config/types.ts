// The effective configuration: the YAML file of docs/configuration.md after
// interpolation, env overrides, defaults and validation. Keys keep the YAML
// spelling so that a key in a log line, an error and the file are the same
// word. Sizes are resolved to bytes, durations are milliseconds. The object
// handed to the pipeline is deeply frozen.

import type { Effective, SCHEMA } from './schema.js';
export type { SourceRoute } from './checks.js';

/** The effective config: its type is inferred from the one declaration of each key (schema.ts). */
export type Config = Effective<typeof SCHEMA>;

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
