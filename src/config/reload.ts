// SIGHUP (docs/configuration.md): everything may change except state_dir (the lock
// and the checkpoints live there) and admin.listen (the socket is bound once);
// those keep their old value until a restart, with a warning.
import { isDeepStrictEqual } from 'node:util';
import type { Config } from './types.js';

export const RESTART_ONLY_KEYS = ['state_dir', 'admin.listen'] as const;

/** The restart-only keys whose value differs between two configs. */
export function restartRequiredChanges(before: Readonly<Config>, after: Readonly<Config>): string[] {
  return RESTART_ONLY_KEYS.filter((k) => !isDeepStrictEqual(get(before, k), get(after, k)));
}

function get(config: Readonly<Config>, keyPath: string): unknown {
  return keyPath.split('.').reduce<unknown>((node, part) => (node as Record<string, unknown>)[part], config);
}
