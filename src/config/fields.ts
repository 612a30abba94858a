// One constructor per kind of key. A Field turns a raw leaf (see raw.ts) into
// its effective value, or says why it cannot, with the fix in the words.
import path from 'node:path';
import { TypedScalar, valueOf } from './raw.js';
import { formatBytes, MAX_TIMER_MS, parseDuration, parseSize } from './units.js';

export interface FieldContext {
  /** Relative paths (spool.dir, state_dir, token_file, ca_file) resolve here. */
  cwd: string;
  /** Relative spool.sources globs resolve here: the config file's directory. */
  baseDir: string;
}

/** A problem inside a structured value, at a sub-path such as `[0].datasource`. */
export interface SubProblem {
  at: string;
  value: unknown;
  why: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; why: string; sub?: SubProblem[] };

export class Field<T = unknown> {
  constructor(
    /** Short type description, for docs and messages. */
    readonly type: string,
    readonly parse: (raw: unknown, ctx: FieldContext) => Parsed<T>,
    /** The value when the key is absent (effective form: bytes, ms); set by `key()` in the schema. */
    readonly defaultValue?: T,
    /** One line for docs: what the key does. */
    readonly doc?: string,
  ) {}
}

/** A key of the schema: its kind, default and one doc line, declared together (schema.ts). */
export function key<T>(field: Field<T>, defaultValue: NoInfer<T>, doc: string): Field<T> {
  return new Field(field.type, field.parse, defaultValue, doc);
}

export const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
export const bad = (why: string): Parsed<never> => ({ ok: false, why });

/** The text of a scalar: strings as read, numbers and booleans as written. */
export function textOf(raw: unknown): string | null | undefined {
  if (raw === null || typeof raw === 'string') return raw;
  if (raw instanceof TypedScalar) return raw.text;
  return undefined;
}

type Check = (s: string, ctx: FieldContext) => Parsed<string>;

/** A string that may be null; "" means null too (an unset `${VAR:-}`). */
export function optionalString(type: string, check?: Check): Field<string | null> {
  return new Field(type, (raw, ctx) => {
    const s = textOf(raw);
    if (s === undefined) return bad(`expected ${type} (a string), or null`);
    if (s === null || s === '') return ok(null);
    return check ? check(s, ctx) : ok(s);
  });
}

export function requiredString(type: string, check?: Check): Field<string> {
  return new Field(type, (raw, ctx) => {
    const s = textOf(raw);
    if (s === undefined) return bad(`expected ${type} (a string)`);
    if (s === null) return bad(`must be set to ${type}; remove the key to use the default`);
    return check ? check(s, ctx) : ok(s);
  });
}

export const absolutePath: Check = (s, ctx) => ok(path.resolve(ctx.cwd, s));

export function requiredPath(): Field<string> {
  return requiredString('a directory path', (s, ctx) =>
    s.trim() === '' ? bad('must not be empty; give a directory path') : absolutePath(s, ctx),
  );
}

export function bool(): Field<boolean> {
  return new Field('true | false', (raw) => {
    const v = valueOf(raw);
    if (typeof v === 'boolean') return ok(v);
    if (v === 'true' || v === 'false') return ok(v === 'true');
    if (typeof v === 'string' && /^(yes|no|on|off|y|n)$/i.test(v)) {
      return bad('expected true or false (YAML 1.2 reads yes/no/on/off as strings)');
    }
    return bad('expected true or false');
  });
}

export function oneOf<const V extends string>(values: readonly V[]): Field<V> {
  return new Field(values.join(' | '), (raw) => {
    const v = textOf(raw);
    if (typeof v === 'string' && (values as readonly string[]).includes(v)) return ok(v as V);
    return bad(`must be one of ${values.join(', ')}`);
  });
}

function wholeNumber(raw: unknown): number | undefined {
  const v = valueOf(raw);
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (typeof v === 'string' && /^\s*[0-9]+\s*$/.test(v)) return Number(v);
  return undefined;
}

export function int(opts: { min: number; max?: number; unit?: string }): Field<number> {
  const max = opts.max ?? Number.MAX_SAFE_INTEGER;
  const what = opts.min === 1 ? 'a positive integer' : `an integer >= ${opts.min}`;
  return new Field('integer', (raw) => {
    const n = wholeNumber(raw);
    if (n === undefined) return bad(`expected ${what}`);
    if (n < opts.min) return bad(`must be ${what}`);
    if (n > max) return bad(`must be at most ${max}${opts.unit ? ` ${opts.unit}` : ''}`);
    return ok(n);
  });
}

export function number(opts: { min: number }): Field<number> {
  return new Field('number', (raw) => {
    const v = valueOf(raw);
    const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
    if (!Number.isFinite(n)) return bad(`expected a number >= ${opts.min}`);
    if (n < opts.min) return bad(`must be >= ${opts.min}`);
    return ok(n);
  });
}

export function size(opts: { min: number; max?: number; maxWhy?: string }): Field<number> {
  const max = opts.max ?? Number.MAX_SAFE_INTEGER;
  return new Field('size', (raw) => {
    let bytes: number;
    try {
      bytes = parseSize(valueOf(raw));
    } catch (err) {
      return bad((err as Error).message);
    }
    if (bytes < opts.min) {
      return bad(opts.min <= 1 ? 'must be a positive size' : `must be at least ${formatBytes(opts.min)} (${opts.min} bytes)`);
    }
    if (bytes > max) return bad(`must be at most ${formatBytes(max)} (${max} bytes)${opts.maxWhy ? `, ${opts.maxWhy}` : ''}`);
    return ok(bytes);
  });
}

export function duration(opts: { min: 0 | 1 }): Field<number> {
  return new Field('duration (ms)', (raw) => {
    let ms: number;
    try {
      ms = parseDuration(valueOf(raw));
    } catch (err) {
      return bad((err as Error).message);
    }
    if (ms < opts.min) return bad(opts.min === 1 ? 'must be > 0 milliseconds' : 'must be >= 0 milliseconds');
    if (ms > MAX_TIMER_MS) return bad(`must be at most ${MAX_TIMER_MS} ms (~24.8 days, the limit of Node's timers)`);
    return ok(ms);
  });
}

/** `auto`, or what `field` takes: the effective value is 'auto' or the field's. */
export function autoOr<T>(field: Field<T>): Field<T | 'auto'> {
  return new Field(`auto or ${field.type}`, (raw, ctx) => {
    const v = valueOf(raw);
    if (typeof v === 'string' && v.trim() === 'auto') return ok<T | 'auto'>('auto');
    const r = field.parse(raw, ctx);
    return r.ok ? r : { ...r, why: `${r.why}; or auto` };
  });
}
