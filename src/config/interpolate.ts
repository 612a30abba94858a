// `${VAR}`, `${VAR:-default}` and `$$` in string values (docs/configuration.md).
// Runs on parsed scalars, never on the file text, so comments and keys are
// never interpolated and a value cannot inject YAML structure around itself.
// `${VAR:-default}` takes the default when VAR is unset or empty (as in sh);
// a `$` not followed by `{` or `$` is kept as it is.

export interface Interpolated {
  text: string;
  /** Referenced without a default and not set. */
  missing: string[];
  /** `${...}` bodies that are not NAME or NAME:-default. */
  malformed: string[];
  /** True when the input contained any `$` sequence that was replaced. */
  changed: boolean;
  /** Every variable referenced, set or not. */
  names: string[];
}

const REF_RE = /^([A-Za-z_][A-Za-z0-9_]*)(?::-([\s\S]*))?$/;
const SINGLE_REF_RE = /^\$\{[^}]*\}$/;

export function interpolate(input: string, env: NodeJS.ProcessEnv): Interpolated {
  const out: Interpolated = { text: '', missing: [], malformed: [], changed: false, names: [] };
  let i = 0;
  while (i < input.length) {
    const dollar = input.indexOf('$', i);
    if (dollar === -1 || dollar === input.length - 1) break;
    const next = input[dollar + 1];
    if (next === '$') {
      out.text += input.slice(i, dollar + 1);
      out.changed = true;
      i = dollar + 2;
      continue;
    }
    if (next !== '{') {
      out.text += input.slice(i, dollar + 1);
      i = dollar + 1;
      continue;
    }
    out.text += input.slice(i, dollar);
    out.changed = true;
    const close = input.indexOf('}', dollar + 2);
    if (close === -1) {
      out.malformed.push(input.slice(dollar));
      return { ...out, text: out.text + input.slice(dollar) };
    }
    out.text += resolve(input.slice(dollar + 2, close), env, out);
    i = close + 1;
  }
  out.text += input.slice(i);
  return out;
}

function resolve(body: string, env: NodeJS.ProcessEnv, out: Interpolated): string {
  const m = REF_RE.exec(body);
  if (!m) {
    out.malformed.push(`\${${body}}`);
    return '';
  }
  const [, name, fallback] = m as unknown as [string, string, string | undefined];
  const value = env[name];
  out.names.push(name);
  if (fallback !== undefined) return value === undefined || value === '' ? fallback : value;
  if (value === undefined) {
    out.missing.push(name);
    return '';
  }
  return value;
}

/** True when the whole string is one `${...}` reference. */
export function isSingleReference(input: string): boolean {
  return SINGLE_REF_RE.test(input);
}
