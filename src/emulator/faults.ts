// The faults grammar (docs/emulator.md, `--faults`), validated strictly: an
// unknown kind or field is an error naming the entry, because a typo such as
// `"evry": 3` would otherwise silently inject the fault on every request.
import { readFileSync } from 'node:fs';
import { FaultSpecError } from './errors.js';
import type { Fault } from './types.js';

/** Fields every kind may carry (the selector). */
const SELECTOR_FIELDS = ['kind', 'p', 'every', 'datasource'];

/** Extra fields allowed per kind; `true` = required. */
const KIND_FIELDS: Record<Fault['kind'], Record<string, boolean>> = {
  status: { status: true, retry_after: false, location: false },
  partial: { status: false },
  reset: {},
  reset_after_insert: {},
  hang: {},
  slow: { delay_ms: true },
  goaway: {},
  reject_marker: { marker: true },
};

/** Longest Data Source name accepted; longer ones are a 400 (and cannot be a file name). */
export const MAX_DATASOURCE_NAME_CHARS = 255;
export const DATASOURCE_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]{0,254}$/;

/** Parses `--faults JSON` or `--faults @FILE`. */
export function loadFaultsArg(arg: string): Fault[] {
  let text = arg;
  if (arg.startsWith('@')) {
    try {
      text = readFileSync(arg.slice(1), 'utf8');
    } catch (err) {
      throw new FaultSpecError(`cannot read faults file ${arg.slice(1)}: ${(err as Error).message}`);
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new FaultSpecError(`faults are not valid JSON (${(err as Error).message}); give a JSON array such as '[{"kind":"status","status":503,"p":0.1}]'`);
  }
  return parseFaults(parsed);
}

/** Validates a faults list (library option or parsed JSON) and returns normalized copies. */
export function parseFaults(value: unknown): Fault[] {
  if (!Array.isArray(value)) throw new FaultSpecError('faults must be a JSON array of fault objects');
  return value.map((entry, i) => parseFault(entry, `faults[${i}]`));
}

export function parseFault(entry: unknown, where: string): Fault {
  const fail = (why: string): never => {
    throw new FaultSpecError(`${where} ${safeJson(entry)}: ${why}`);
  };
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return fail('must be an object with a "kind"');
  const obj = entry as Record<string, unknown>;
  const kind = obj.kind;
  if (typeof kind !== 'string' || !(kind in KIND_FIELDS)) {
    return fail(`unknown kind ${safeJson(kind)}; use one of ${Object.keys(KIND_FIELDS).join(', ')}`);
  }
  const allowed = KIND_FIELDS[kind as Fault['kind']];
  for (const key of Object.keys(obj)) {
    if (!SELECTOR_FIELDS.includes(key) && !(key in allowed)) {
      return fail(`unknown field "${key}" for kind "${kind}"; allowed: ${[...SELECTOR_FIELDS, ...Object.keys(allowed)].join(', ')}`);
    }
  }
  for (const [key, required] of Object.entries(allowed)) {
    if (required && obj[key] === undefined) fail(`kind "${kind}" needs "${key}"`);
  }
  checkSelector(obj, fail);
  checkKindFields(kind as Fault['kind'], obj, fail);
  const fault = { ...obj } as Record<string, unknown>;
  if (kind === 'partial' && fault.status === undefined) fault.status = 500;
  return fault as unknown as Fault;
}

function checkSelector(obj: Record<string, unknown>, fail: (why: string) => never): void {
  if (obj.p !== undefined && obj.every !== undefined) fail('give "p" or "every", not both');
  if (obj.p !== undefined && !(typeof obj.p === 'number' && obj.p > 0 && obj.p <= 1)) fail('"p" must be a number in (0, 1]');
  if (obj.every !== undefined && !isInt(obj.every, 1)) fail('"every" must be an integer >= 1');
  if (obj.datasource !== undefined && !(typeof obj.datasource === 'string' && DATASOURCE_NAME_RE.test(obj.datasource))) {
    fail(`"datasource" must be a Data Source name matching ^[A-Za-z_][A-Za-z0-9_]*$ of at most ${MAX_DATASOURCE_NAME_CHARS} characters`);
  }
}

function checkKindFields(kind: Fault['kind'], obj: Record<string, unknown>, fail: (why: string) => never): void {
  switch (kind) {
    case 'status':
      if (!isInt(obj.status, 100) || (obj.status as number) > 599) fail('"status" must be an HTTP status 100-599');
      if (obj.retry_after !== undefined && !isInt(obj.retry_after, 0)) fail('"retry_after" must be an integer number of seconds >= 0');
      if (obj.location !== undefined && typeof obj.location !== 'string') fail('"location" must be a string (the Location header of a 3xx)');
      break;
    case 'partial':
      if (obj.status !== undefined && obj.status !== 500 && obj.status !== 422) fail('"status" of a partial insert must be 500 or 422');
      break;
    case 'slow':
      if (!isInt(obj.delay_ms, 0)) fail('"delay_ms" must be an integer >= 0');
      break;
    case 'reject_marker':
      if (typeof obj.marker !== 'string' || obj.marker.length === 0) fail('"marker" must be a non-empty string');
      break;
    default:
      break;
  }
}

function isInt(v: unknown, min: number): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= min;
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
