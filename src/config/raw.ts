// The raw tree: what the file (after ${VAR} interpolation) and the SPOOLSHIP_*
// variables say, before defaults and validation. Plain objects, arrays and
// scalars, except that a plain YAML scalar which reads as a number or boolean
// keeps its source text in a TypedScalar: string keys take the text, so a
// token `0123` stays "0123" instead of becoming 123.

export class TypedScalar {
  constructor(
    readonly value: unknown,
    readonly text: string,
  ) {}
}

export type RawTree = Record<string, unknown>;

/** Where a value came from, for messages: absent = the file. */
export type Origins = Map<string, string>;

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof TypedScalar);
}

/** The YAML reading of a leaf. */
export function valueOf(v: unknown): unknown {
  return v instanceof TypedScalar ? v.value : v;
}

/** Deep copy without TypedScalar wrappers, for messages and the effective config. */
export function plain(v: unknown): unknown {
  if (v instanceof TypedScalar) return v.value;
  if (Array.isArray(v)) return v.map(plain);
  if (isPlainObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

/**
 * Wrap a value read from YAML text (a `${VAR}` result or an environment
 * variable) so that the text is kept when the reading is a number or boolean.
 */
export function fromYamlText(value: unknown, text: string): unknown {
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return new TypedScalar(value, text);
  }
  return value;
}

export function joinPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent}[${key}]`;
  return parent ? `${parent}.${key}` : key;
}

/** Deep copy keeping TypedScalar wrappers (structuredClone would drop the class). */
export function cloneRaw(v: unknown): unknown {
  if (v instanceof TypedScalar) return v;
  if (Array.isArray(v)) return v.map(cloneRaw);
  if (isPlainObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, cloneRaw(x)]));
  return v;
}
