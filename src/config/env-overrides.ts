// SPOOLSHIP_* environment variables (docs/configuration.md). Every key has one:
// `SPOOLSHIP_` + its path in upper case, `__` between levels
// (`batch.linger_ms` -> SPOOLSHIP_BATCH__LINGER_MS). Values are read as YAML
// (`250`, `true`, `null`, `[a, b]`) and win over the file. Three names are
// reserved and name no key: SPOOLSHIP_CONFIG (the file), SPOOLSHIP_TOKEN and
// SPOOLSHIP_ADMIN_TOKEN (defaults of api.token and clusters.token).
import { isPlainObject, type Origins, type RawTree } from './raw.js';
import { keyPaths, sectionPaths } from './schema.js';
import { closest } from './suggest.js';
import { readYamlText } from './yaml-tree.js';

export const ENV_PREFIX = 'SPOOLSHIP_';
export const RESERVED_ENV = ['SPOOLSHIP_CONFIG', 'SPOOLSHIP_TOKEN', 'SPOOLSHIP_ADMIN_TOKEN'] as const;

/** `api.base_url` -> `SPOOLSHIP_API__BASE_URL`. */
export function envNameFor(keyPath: string): string {
  return ENV_PREFIX + keyPath.split('.').join('__').toUpperCase();
}

const KEY_BY_ENV = new Map(keyPaths().map((p) => [envNameFor(p), p]));

/**
 * Write every SPOOLSHIP_* override into `tree`, recording in `origins` which
 * variable set which key. Returns warnings for variables that name no key
 * and are not `referenced` by a ${VAR} of the file either.
 */
export function applyEnvOverrides(tree: RawTree, env: NodeJS.ProcessEnv, origins: Origins, referenced: ReadonlySet<string> = new Set()): string[] {
  const warnings: string[] = [];
  const names = Object.keys(env)
    .filter((n) => n.startsWith(ENV_PREFIX) && !(RESERVED_ENV as readonly string[]).includes(n))
    .filter((n) => KEY_BY_ENV.has(n) || !referenced.has(n))
    .sort();
  for (const name of names) {
    const keyPath = KEY_BY_ENV.get(name);
    if (keyPath === undefined) {
      warnings.push(unknownVariable(name));
      continue;
    }
    if (setPath(tree, keyPath, readYamlText(env[name] ?? ''))) origins.set(keyPath, name);
  }
  return warnings;
}

function unknownVariable(name: string): string {
  const section = sectionPaths().find((s) => envNameFor(s) === name);
  if (section) {
    return `${name} names the section ${section}, not a key; it is ignored. Set one key, e.g. ${envNameFor(`${section}.${keyPaths().find((p) => p.startsWith(`${section}.`))!.split('.')[1]}`)}`;
  }
  // Compare without underscores: SPOOLSHIP_BATCH_LINGER is one `_` and `_MS`
  // away from SPOOLSHIP_BATCH__LINGER_MS, too far for a plain edit distance.
  const squash = (n: string) => n.slice(ENV_PREFIX.length).replace(/_/g, '');
  const byShape = new Map([...KEY_BY_ENV.keys(), ...RESERVED_ENV].map((n) => [squash(n), n]));
  const near = closest(squash(name), byShape.keys());
  const hint = near === null ? null : byShape.get(near)!;
  return `${name} names no config key; it is ignored${hint ? `. Did you mean ${hint}?` : ` (see 'spoolship check-config --help' for the naming rule)`}`;
}

/** False when a section on the way is not a mapping (validation reports that). */
function setPath(tree: RawTree, keyPath: string, value: unknown): boolean {
  const parts = keyPath.split('.');
  let node: RawTree = tree;
  for (const part of parts.slice(0, -1)) {
    if (node[part] === undefined || node[part] === null) node[part] = {};
    const next = node[part];
    if (!isPlainObject(next)) return false;
    node = next;
  }
  node[parts[parts.length - 1]!] = value;
  return true;
}

/**
 * api.token defaults to SPOOLSHIP_TOKEN and clusters.token to
 * SPOOLSHIP_ADMIN_TOKEN, when the key is absent. Not when api.token_file is
 * set: the file is the token then, and "both set" would be a false alarm.
 */
export function applyTokenDefaults(tree: RawTree, env: NodeJS.ProcessEnv, origins: Origins): string[] {
  const warnings: string[] = [];
  const api = sectionOf(tree, 'api');
  const token = env.SPOOLSHIP_TOKEN;
  if (api && api.token === undefined && token) {
    const tokenFile = api.token_file;
    if (tokenFile === undefined || tokenFile === null || tokenFile === '') {
      api.token = token;
      origins.set('api.token', 'SPOOLSHIP_TOKEN');
    } else {
      warnings.push('SPOOLSHIP_TOKEN is set but api.token_file is used; unset one of them to avoid confusion');
    }
  }
  const clusters = sectionOf(tree, 'clusters');
  const adminToken = env.SPOOLSHIP_ADMIN_TOKEN;
  if (clusters && clusters.token === undefined && adminToken) {
    clusters.token = adminToken;
    origins.set('clusters.token', 'SPOOLSHIP_ADMIN_TOKEN');
  }
  return warnings;
}

/** The section's mapping, created when absent; null when it is not a mapping. */
function sectionOf(tree: RawTree, name: string): RawTree | null {
  if (tree[name] === undefined || tree[name] === null) tree[name] = {};
  const s = tree[name];
  return isPlainObject(s) ? s : null;
}
