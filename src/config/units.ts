// Sizes and durations as people write them in YAML, turned into the numbers
// the pipeline uses (bytes, milliseconds). Decimal units step by 10^3 (the
// platform's "10 MB" request limit is 10,000,000 bytes); binary units by 2^10.

const UNIT_BYTES: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/** setTimeout fires at once for delays above 2^31-1 ms (~24.8 days). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

const SIZE_RE = /^([0-9][0-9_]*(?:\.[0-9]+)?)\s*([a-z]*)$/i;
const DURATION_HINT_RE = /^([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|min|h)$/i;
const DURATION_UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000 };

/**
 * Bytes from an integer (bytes) or a string such as `10MB`, `64MiB`, `1.5GB`,
 * `4096`. Units are case-insensitive. Throws an Error whose message says what
 * to write instead.
 */
export function parseSize(input: unknown): number {
  if (typeof input === 'number') {
    if (!Number.isSafeInteger(input)) throw new Error('a size is a whole number of bytes, or a string like 10MB or 64MiB');
    return input;
  }
  if (typeof input !== 'string') throw new Error('expected a size: bytes (10000000) or a string like 10MB or 64MiB');
  const m = SIZE_RE.exec(input.trim());
  const unit = m?.[2]?.toLowerCase() ?? '';
  const factor = unit === '' ? 1 : UNIT_BYTES[unit];
  if (!m || factor === undefined) {
    throw new Error('not a size; write bytes (10000000) or a number with KB, MB, GB (10^3 steps) or KiB, MiB, GiB (2^10 steps), e.g. 10MB');
  }
  const bytes = Number(m[1]!.replace(/_/g, '')) * factor;
  // 1.5KiB is 1536 bytes; 0.3KiB is not a whole number of bytes.
  const rounded = Math.round(bytes);
  if (Math.abs(bytes - rounded) > 1e-6 * Math.max(1, bytes) || !Number.isSafeInteger(rounded)) {
    throw new Error('not a whole number of bytes; use a smaller unit');
  }
  return rounded;
}

/**
 * Milliseconds from an integer or a digit string. `5s` and friends are
 * refused (every duration key ends in `_ms`), with the number to write.
 */
export function parseDuration(input: unknown): number {
  if (typeof input === 'number') {
    if (!Number.isSafeInteger(input)) throw new Error('a duration is a whole number of milliseconds');
    return input;
  }
  if (typeof input === 'string') {
    const s = input.trim();
    if (/^[0-9][0-9_]*$/.test(s)) return Number(s.replace(/_/g, ''));
    const hint = DURATION_HINT_RE.exec(s);
    if (hint) {
      const ms = Math.round(Number(hint[1]) * DURATION_UNIT_MS[hint[2]!.toLowerCase()]!);
      throw new Error(`durations are integers in milliseconds: write ${ms}`);
    }
  }
  throw new Error('expected a duration: a whole number of milliseconds, e.g. 1000');
}

/** Human form of a byte count for messages: 10000000 -> "10MB", 67108864 -> "64MiB". */
export function formatBytes(bytes: number): string {
  for (const [unit, factor] of [['GiB', 2 ** 30], ['MiB', 2 ** 20], ['KiB', 2 ** 10]] as const) {
    if (bytes >= factor && bytes % factor === 0) return `${bytes / factor}${unit}`;
  }
  for (const [unit, factor] of [['GB', 1e9], ['MB', 1e6], ['KB', 1e3]] as const) {
    if (bytes >= factor && bytes % factor === 0) return `${bytes / factor}${unit}`;
  }
  return `${bytes} bytes`;
}
