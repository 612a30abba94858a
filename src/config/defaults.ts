// The defaults of every key, in effective form (bytes, milliseconds), derived
// from their one declaration in schema.ts. `api.token` and `clusters.token`
// default to SPOOLSHIP_TOKEN and SPOOLSHIP_ADMIN_TOKEN (env-overrides.ts,
// applyTokenDefaults); null here.
import { defaultsOf } from './schema.js';
import type { Config } from './types.js';

export const DEFAULTS = defaultsOf() as Config;

/** The last place the lookup tries (docs/configuration.md). */
export const SYSTEM_CONFIG_FILE = '/etc/spoolship/spoolship.yaml';
/** Relative to the working directory. */
export const CWD_CONFIG_FILE = 'config/spoolship.yaml';
