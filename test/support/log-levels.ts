// spoolship's JSON logs carry the level as a word ("warn"); tests compare
// levels as pino's numbers (warn 40, error 50), so a parsed line gets both.
const LEVELS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };

/** `rec` with `level` as a number and `levelWord` as written. */
export function withLevelNumber<T extends { level: unknown }>(rec: T): T & { level: number; levelWord: string } {
  const word = typeof rec.level === 'string' ? rec.level : '';
  const level = typeof rec.level === 'number' ? rec.level : (LEVELS[word] ?? NaN);
  return Object.assign(rec, { level, levelWord: word });
}
