// YAML text -> raw tree (raw.ts), with ${VAR} interpolation of string values.
// A plain scalar that is exactly one reference is read again as YAML after
// substitution, so `linger_ms: ${LINGER:-250}` is the number 250 while
// `dir: "${DIR}"` stays a string.
import { isAlias, isMap, isScalar, isSeq, parseDocument, type Document, type Node } from 'yaml';
import type { ConfigProblem } from '../errors.js';
import { interpolate, isSingleReference } from './interpolate.js';
import { fromYamlText, joinPath, TypedScalar } from './raw.js';
import { redactConfigLine } from './redact.js';

/** Bounds alias expansion ("billion laughs") and recursive anchors. */
const MAX_ALIASES = 1000;
const MAX_DEPTH = 64;

interface WalkState {
  doc: Document;
  env: NodeJS.ProcessEnv | null;
  problems: ConfigProblem[];
  aliases: number;
  referenced: Set<string>;
}

/** Parse YAML text; syntax errors become problems located `file:line:col`. */
export function parseYaml(text: string, where: string): { doc: Document | null; problems: ConfigProblem[] } {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length === 0) return { doc, problems: [] };
  const lines = text.split(/\r?\n/);
  const problems: ConfigProblem[] = [];
  const seenLines = new Set<number>();
  for (const e of doc.errors) {
    const pos = e.linePos?.[0];
    // One syntax error makes the parser trip again later on the same line.
    if (pos && seenLines.has(pos.line)) continue;
    if (pos) seenLines.add(pos.line);
    const line = pos ? redactConfigLine((lines[pos.line - 1] ?? '').trim()) : '';
    const hint = line.includes('${') && /[{}[\]]/.test(line.replace(/\$\{[^}]*\}/g, ''))
      ? '; inside [...] or {...} quote values that use ${VAR}: "${VAR}"'
      : '';
    problems.push({
      path: pos ? `${where}:${pos.line}:${pos.col}` : where,
      value: line,
      why: `${e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '')}; fix the YAML syntax${hint}`,
    });
  }
  return { doc: null, problems };
}

/**
 * The raw tree of a parsed document. With `env`, string values are
 * interpolated and unset variables reported (naming the key); without it
 * (environment variable values) they are taken as they are.
 */
export function documentToRaw(
  doc: Document,
  env: NodeJS.ProcessEnv | null,
): { value: unknown; problems: ConfigProblem[]; referenced: Set<string> } {
  const state: WalkState = { doc, env, problems: [], aliases: 0, referenced: new Set() };
  const value = walk(doc.contents as Node | null, '', state, 0);
  return { value, problems: state.problems, referenced: state.referenced };
}

function walk(node: Node | null | undefined, at: string, st: WalkState, depth: number): unknown {
  if (node === null || node === undefined) return null;
  if (depth > MAX_DEPTH) {
    st.problems.push({ path: at, value: '(nested too deep)', why: `nesting deeper than ${MAX_DEPTH} levels (a recursive alias?); simplify the YAML` });
    return null;
  }
  if (isAlias(node)) {
    if (++st.aliases > MAX_ALIASES) {
      st.problems.push({ path: at, value: `*${node.source}`, why: `more than ${MAX_ALIASES} alias expansions; simplify the YAML` });
      return null;
    }
    return walk(node.resolve(st.doc) as Node | undefined, at, st, depth + 1);
  }
  if (isMap(node)) {
    const obj: Record<string, unknown> = {};
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      obj[key] = walk(pair.value as Node | null, joinPath(at, key), st, depth + 1);
    }
    return obj;
  }
  if (isSeq(node)) return node.items.map((item, i) => walk(item as Node | null, joinPath(at, i), st, depth + 1));
  if (isScalar(node)) return scalar(node.value, node.type, node.source, at, st);
  return null;
}

function scalar(value: unknown, type: string | undefined, source: string | undefined, at: string, st: WalkState): unknown {
  const plainStyle = type === 'PLAIN';
  if (typeof value !== 'string') {
    return plainStyle ? fromYamlText(value, source ?? String(value)) : value;
  }
  if (!st.env) return value;
  const r = interpolate(value, st.env);
  for (const name of r.names) st.referenced.add(name);
  for (const name of r.missing) {
    st.problems.push({ path: at, value, why: `environment variable ${name} is not set; set it, or give a default: \${${name}:-value}` });
  }
  for (const ref of r.malformed) {
    st.problems.push({ path: at, value, why: `${ref} is not a valid reference; write \${NAME} or \${NAME:-default}, and $$ for a literal $` });
  }
  // On failure keep the text as written: the key is reported (or unknown) anyway.
  if (!r.changed || r.missing.length > 0 || r.malformed.length > 0) return value;
  return plainStyle && isSingleReference(value) ? readYamlText(r.text) : r.text;
}

/**
 * A value given as text (a `${VAR}` result, a SPOOLSHIP_* variable) read as
 * YAML: `250` a number, `true` a boolean, `null` null, `[a, b]` a list; ""
 * stays "" (admin.listen: "" disables; optional strings take it as null).
 * Plain text that reads as a string is kept verbatim (a token such as `abc #1`
 * must not lose its " #1" to YAML's comment rule), and so is text that is not
 * valid YAML (a token starting with `@`), for the key's own check to judge;
 * quoted text is the string inside the quotes (`"debug"` is debug, `""` is "").
 */
export function readYamlText(text: string): unknown {
  if (text === '') return '';
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0) return text;
  const { value } = documentToRaw(doc, null);
  // A quoted string ('"debug"', '""') is the string inside the quotes.
  if (typeof value === 'string') return isScalar(doc.contents) && doc.contents.type !== 'PLAIN' ? value : text;
  return value instanceof TypedScalar ? new TypedScalar(value.value, text) : value;
}
