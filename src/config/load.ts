// loadConfig: locate -> read -> parse -> interpolate -> env overrides ->
// defaults + validation -> cross-checks -> freeze. Every problem found on the
// way is collected into one ConfigError, so a user fixes a file in one pass.
import { MAX_CONFIG_FILE_BYTES, readRegularFileSync, UnreadableFileError } from '../util/bounded-read.js';
import path from 'node:path';
import { ConfigError, type ConfigProblem } from '../errors.js';
import { crossCheck } from './cross-checks.js';
import { applyEnvOverrides, applyTokenDefaults } from './env-overrides.js';
import { deepFreeze } from './freeze.js';
import { locateConfig, type LocateOptions } from './locate.js';
import { cloneRaw, isPlainObject, type Origins } from './raw.js';
import { MIN_SECRET_LENGTH, REDACTED, redactValue, scrubValue, secretValues } from './redact.js';
import { isSingleReference } from './interpolate.js';
import { keyPaths } from './schema.js';
import type { Config, LoadedConfig } from './types.js';
import { validateTree } from './validate.js';
import { documentToRaw, parseYaml } from './yaml-tree.js';

export interface LoadConfigOptions extends LocateOptions {
  /**
   * Keys the command never uses (\`status\`, \`queue\`, \`dead-letter list\` need
   * no token): an unset \`\${VAR}\` in them is not a problem for that command.
   */
  unusedKeys?: readonly string[];
  /**
   * The only keys the command uses (\`clusters\`: its org, token, API host and
   * proxy); an unset \`\${VAR}\` elsewhere is not a problem for it. Either way
   * a key left out takes its default.
   */
  usedKeys?: readonly string[];
  /** Called for every warning, also when loading then fails (a misspelt SPOOLSHIP_* may be why). */
  onWarning?: (message: string) => void;
  /** The command sends, or checks for one that does: no API token is a problem, not a warning. */
  tokenRequired?: boolean;
}

export function loadConfig(opts: LoadConfigOptions): LoadedConfig {
  const located = locateConfig(opts);
  const warnings: string[] = [];
  let tree: unknown = {};
  let pending: ConfigProblem[] = [];
  let referenced = new Set<string>();
  if (located.file) {
    ({ tree, pending, referenced } = readConfigFile(located.file, opts.env));
  } else {
    warnings.push(`no config file found (looked for ${located.searched.join(', ')}); using the defaults and SPOOLSHIP_* variables`);
    for (const w of warnings) opts.onWarning?.(w);
  }
  const resolved = resolveConfig(tree, {
    env: opts.env,
    cwd: opts.cwd,
    baseDir: located.file ? path.dirname(located.file) : opts.cwd,
    source: located.file ?? undefined,
    pendingProblems: pending.filter((p) => usedBy(opts, p.path) || void dropKey(tree, p.path)),
    referencedVariables: referenced,
    onWarning: opts.onWarning,
    tokenRequired: opts.tokenRequired,
  });
  return {
    config: resolved.config,
    file: located.file,
    warnings: [...warnings, ...resolved.warnings],
    envWarnings: resolved.envWarnings,
    source: located.source,
    searched: located.searched,
    secrets: [...secretValues(opts.env, referenced), ...tokenValues(resolved.config)],
  };
}

/** The tokens' own values: secrets wherever else they land (`wait: ${MYTOK}` beside `token: ${MYTOK}`), whatever their variables are called. */
function tokenValues(c: Readonly<Config>): string[] {
  return [c.api.token, c.clusters.token].filter((t): t is string => typeof t === 'string' && t.length >= MIN_SECRET_LENGTH && t !== REDACTED);
}

/** What \`status\`, \`queue\` and \`dead-letter list|purge\` never use: they read the state_dir (and ask the agent), never the network. */
export const NETWORK_KEYS = ['api', 'clusters', 'limits'] as const;

/** What \`send\` and \`dead-letter replay\` never use: they send once, with no admin endpoint. */
export const ONE_SHOT_UNUSED_KEYS = ['clusters', 'admin'] as const;

const under = (p: string, k: string) => p === k || p.startsWith(`${k}.`) || p.startsWith(`${k}[`);

/** Does the command use the key at \`p\` (so an unset \`\${VAR}\` there is its problem)? */
function usedBy(opts: Pick<LoadConfigOptions, 'unusedKeys' | 'usedKeys'>, p: string): boolean {
  if (opts.usedKeys && !opts.usedKeys.some((k) => under(p, k))) return false;
  return !(opts.unusedKeys ?? []).some((k) => under(p, k));
}

/** A key the command does not use whose \`\${VAR}\` is unset takes its default (up to the first list index: the whole list). */
function dropKey(tree: unknown, p: string): void {
  const parts = p.split('[')[0]!.split('.');
  let node = tree;
  for (const k of parts.slice(0, -1)) {
    if (!isPlainObject(node)) return;
    node = node[k];
  }
  if (isPlainObject(node)) delete node[parts.at(-1)!];
}

/** Read, parse and interpolate one file; YAML syntax errors throw at once. */
function readConfigFile(file: string, env: NodeJS.ProcessEnv): { tree: unknown; pending: ConfigProblem[]; referenced: Set<string> } {
  let text: string;
  try {
    text = readRegularFileSync(file, MAX_CONFIG_FILE_BYTES).toString('utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    const why =
      err instanceof UnreadableFileError
        ? err.code === 'EFBIG'
          ? `the config file is larger than ${MAX_CONFIG_FILE_BYTES} bytes; point -c at the YAML config`
          : 'the config file is not a regular file (a FIFO, a device, a directory); point -c at the YAML config'
        : 'cannot read the config file; check its permissions';
    throw new ConfigError([{ path: file, value: code, why }], file);
  }
  const { doc, problems } = parseYaml(text, file);
  if (!doc) throw new ConfigError(problems, file);
  const { value, problems: pending, referenced } = documentToRaw(doc, env);
  return { tree: value, pending, referenced };
}

export interface ResolveOptions {
  env: NodeJS.ProcessEnv;
  /** Relative spool.dir, state_dir, api.token_file and api.ca_file resolve here. */
  cwd: string;
  /** Relative spool.sources globs resolve here (the config file's directory). */
  baseDir: string;
  /** Named in the ConfigError message. */
  source?: string;
  /** Problems found before (unset ${VAR}); dropped for keys an env override replaces. */
  pendingProblems?: readonly ConfigProblem[];
  /** Variables the file's ${VAR}s use: a SPOOLSHIP_* one among them is no "unknown variable". */
  referencedVariables?: ReadonlySet<string>;
  /** Called for every warning, also when the config is then rejected. */
  onWarning?: (message: string) => void;
  /** No API token is a problem (LoadConfigOptions.tokenRequired). */
  tokenRequired?: boolean;
}

/**
 * Validate an already-parsed config object (e.g. `YAML.parse` output; no
 * `${VAR}` interpolation here): apply SPOOLSHIP_* overrides and token
 * defaults, fill defaults, check, freeze. `tree` is not modified. Throws
 * ConfigError with every problem.
 */
export function resolveConfig(tree: unknown, opts: ResolveOptions): { config: Readonly<Config>; warnings: string[]; envWarnings: string[] } {
  const raw = cloneRaw(tree ?? {});
  const origins: Origins = new Map();
  const warnings: string[] = [];
  const envWarnings: string[] = [];
  if (isPlainObject(raw)) {
    envWarnings.push(...applyEnvOverrides(raw, opts.env, origins, opts.referencedVariables));
    warnings.push(...envWarnings, ...applyTokenDefaults(raw, opts.env, origins));
  }
  // Under an unknown key the "unknown key" problem says enough; under an
  // overridden key the file's value does not matter.
  const pending = (opts.pendingProblems ?? []).flatMap((problem) => {
    const key = keyOf(problem.path);
    return key === null || origins.has(key) ? [] : [{ problem, key }];
  });
  const reported = new Set(pending.map(({ key }) => key));
  const v = validateTree(raw, { cwd: opts.cwd, baseDir: opts.baseDir, origins, reported });
  const cross = crossCheck(v.config, new Set([...v.failed, ...reported]), origins, opts.tokenRequired);
  const allWarnings = [...warnings, ...cross.warnings];
  for (const w of allWarnings) opts.onWarning?.(w);
  const secrets = [...secretValues(opts.env, opts.referencedVariables ?? []), ...tokenValues(v.config)];
  const problems = [...pending.map(({ problem, key }) => redactPending(problem, key)), ...v.problems, ...cross.problems].map((p) => ({
    ...p,
    value: scrubValue(p.value, secrets),
  }));
  if (problems.length > 0) throw new ConfigError(problems, opts.source);
  return { config: deepFreeze(v.config), warnings: allWarnings, envWarnings };
}

/** `token: ${SPOOLSHIP_TOKEN}` holds no secret and is worth showing; `token: abc${X}` does. */
function redactPending(problem: ConfigProblem, key: string): ConfigProblem {
  if (typeof problem.value === 'string' && isSingleReference(problem.value)) return problem;
  return { ...problem, value: redactValue(key, problem.value) };
}

const KEY_PATHS = keyPaths();

/** The schema key a problem path falls under: `spool.sources[0].include` -> `spool.sources`. */
function keyOf(problemPath: string): string | null {
  return KEY_PATHS.find((k) => problemPath === k || problemPath.startsWith(`${k}.`) || problemPath.startsWith(`${k}[`)) ?? null;
}
