// Raw tree -> Config, against SCHEMA: every key present is checked, every key
// absent takes its default (and goes through the same check, so relative
// default paths resolve like written ones), unknown keys are problems. All
// problems are collected; nothing stops at the first.
import type { ConfigProblem } from '../errors.js';
import { DEFAULTS } from './defaults.js';
import { Field, type FieldContext } from './fields.js';
import { isPlainObject, joinPath, plain, type Origins } from './raw.js';
import { isSingleReference } from './interpolate.js';
import { REDACTED, redactValue } from './redact.js';
import { keyPaths, SCHEMA, type Section } from './schema.js';
import { closest } from './suggest.js';
import type { Config } from './types.js';

export interface ValidateContext extends FieldContext {
  /** Which SPOOLSHIP_* variable set a key, for messages. */
  origins: Origins;
  /** Keys whose problem is already reported (an unset ${VAR}): not checked again. */
  reported: ReadonlySet<string>;
}

export interface Validated {
  /** Complete only when `problems` is empty. */
  config: Config;
  problems: ConfigProblem[];
  /** Keys without a usable value; cross-checks skip them. */
  failed: Set<string>;
}

export function validateTree(tree: unknown, ctx: ValidateContext): Validated {
  const out: Validated = { config: {} as Config, problems: [], failed: new Set() };
  if (tree !== null && tree !== undefined && !isPlainObject(tree)) {
    out.problems.push({ path: '(top level)', value: plain(tree), why: 'the config must be a YAML mapping of sections (api:, spool:, batch:, ...)' });
    tree = {};
  }
  out.config = walkSection(SCHEMA, tree, '', ctx, out) as unknown as Config;
  return out;
}

function walkSection(section: Section, raw: unknown, at: string, ctx: ValidateContext, out: Validated): Record<string, unknown> {
  let obj: Record<string, unknown> = {};
  if (isPlainObject(raw)) obj = raw;
  else if (raw !== null && raw !== undefined) {
    out.problems.push({ path: at, value: plain(raw), why: `expected a mapping with keys ${Object.keys(section).join(', ')}` });
    for (const p of keyPaths(section, at)) out.failed.add(p);
  }
  for (const key of Object.keys(obj)) {
    if (key in section) continue;
    // A misspelt `tokne: abc` must not print the token it holds.
    const raw = obj[key];
    const value = SECRET_LOOKING.test(key) && !(typeof raw === 'string' && isSingleReference(raw)) ? REDACTED : plain(raw);
    out.problems.push({ path: joinPath(at, key), value, why: unknownKeyWhy(key, section, at) });
  }
  const result: Record<string, unknown> = {};
  for (const [key, node] of Object.entries(section)) {
    const p = joinPath(at, key);
    if (!(node instanceof Field)) {
      result[key] = walkSection(node, obj[key], p, ctx, out);
      continue;
    }
    if (ctx.reported.has(p) || out.failed.has(p)) {
      out.failed.add(p);
      continue;
    }
    const given = obj[key];
    const r = node.parse(given === undefined ? defaultAt(p) : given, ctx);
    if (r.ok) {
      result[key] = r.value;
      continue;
    }
    out.failed.add(p);
    const from = ctx.origins.get(p);
    const suffix = from ? ` (set by ${from})` : '';
    if (r.sub) {
      for (const s of r.sub) out.problems.push({ path: `${p}${s.at}`, value: s.value, why: `${s.why}${suffix}` });
    } else {
      out.problems.push({ path: p, value: redactValue(p, plain(given)), why: `${r.why}${given === null ? nullWayOut(r.why, p) : ''}${suffix}` });
    }
  }
  return result;
}

/** A null that the key does not take (`wait: null`, `~`): say how to get its default, unless the field said so. */
function nullWayOut(why: string, keyPath: string): string {
  if (why.includes('remove the key')) return '';
  const d = defaultAt(keyPath);
  return `; remove the key to use the default${d === null || d === undefined ? '' : ` (${JSON.stringify(d)})`}`;
}

const SECRET_LOOKING = /tok|secret|pass|key|auth|cred|redis/i;

function defaultAt(keyPath: string): unknown {
  let node: unknown = DEFAULTS;
  for (const part of keyPath.split('.')) node = (node as Record<string, unknown>)[part];
  return structuredClone(node);
}

function unknownKeyWhy(key: string, section: Section, at: string): string {
  const near = closest(key, Object.keys(section));
  if (near) return `unknown key; did you mean ${joinPath(at, near)}?`;
  // A key put in the wrong section: `linger_ms` at the top level.
  const elsewhere = keyPaths().filter((p) => p.split('.').pop() === key || p === key);
  if (elsewhere.length > 0) return `unknown key here; did you mean ${elsewhere.join(' or ')}?`;
  const sectionNear = at === '' ? null : closest(key, keyPaths().map((p) => p.split('.').pop()!));
  if (sectionNear) {
    const full = keyPaths().filter((p) => p.endsWith(`.${sectionNear}`));
    return `unknown key; did you mean ${full.join(' or ')}?`;
  }
  return `unknown key; ${at === '' ? 'top-level' : `${at}`} keys are ${Object.keys(section).join(', ')}`;
}
