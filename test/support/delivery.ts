// What a delivery wait saw, for its failure message. A wait for "every line
// stored" that only times out says nothing: planted bugs (a line cut off by
// one, quarantined rows counted as acknowledged, a followed 3xx) were caught
// by 30-60 s timeouts that named no line and no answer. The waits
// (waitForRows in test/pipeline/helpers.ts, waitForDelivery in
// test/process/helpers.ts) fail at once on a state no further delivery can
// mend, and say on timeout which lines are missing and what the emulator
// answered.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { dataSourceFileName } from '../../src/emulator/events/file-names.js';

/** Rows stored for a Data Source compared with the lines written to it. */
export interface RowsSeen {
  rows: number;
  /** Written lines stored at least once. */
  present: number;
  missing: number;
  /** Rows beyond the first of their line. */
  duplicates: number;
  /** Rows that are not one of the written lines (cut, joined, mangled, foreign). */
  unexpected: number;
  sampleMissing: string[];
  sampleDuplicates: string[];
  sampleUnexpected: string[];
  /** Lines the emulator quarantined for the Data Source (not JSON objects): stored, never as rows. */
  quarantined?: number;
  sampleQuarantined?: string[];
}

/** Lines quoted per kind in a message. */
const SAMPLE = 3;
/** Characters of a quoted line. */
const QUOTE_CHARS = 120;

const quote = (l: string): string => (l.length > QUOTE_CHARS ? `${l.slice(0, QUOTE_CHARS)}...(${l.length} chars)` : l);

export function compareRows(got: readonly string[], expected: readonly string[]): RowsSeen {
  const want = new Set(expected);
  const counts = new Map<string, number>();
  const sampleUnexpected: string[] = [];
  const sampleDuplicates: string[] = [];
  let unexpected = 0;
  let duplicates = 0;
  for (const g of got) {
    if (!want.has(g)) {
      unexpected++;
      if (sampleUnexpected.length < SAMPLE) sampleUnexpected.push(quote(g));
      continue;
    }
    const n = (counts.get(g) ?? 0) + 1;
    counts.set(g, n);
    if (n > 1) {
      duplicates++;
      if (sampleDuplicates.length < SAMPLE) sampleDuplicates.push(quote(g));
    }
  }
  const sampleMissing: string[] = [];
  for (const e of want) {
    if (sampleMissing.length >= SAMPLE) break;
    if (!counts.has(e)) sampleMissing.push(quote(e));
  }
  return { rows: got.length, present: counts.size, missing: want.size - counts.size, duplicates, unexpected, sampleMissing, sampleDuplicates, sampleUnexpected };
}

/**
 * Why no more delivery can make the rows right, or null: a row that is not a
 * written line, or (unless duplicates are allowed) a line stored twice.
 */
export function impossible(seen: Pick<RowsSeen, 'unexpected' | 'duplicates' | 'quarantined'>, allowDuplicates: boolean): string | null {
  if (seen.unexpected > 0) return `${seen.unexpected} row(s) that are not one of the lines written`;
  // The lines written are JSON objects: one quarantined was changed on the way.
  if ((seen.quarantined ?? 0) > 0) return `${seen.quarantined} line(s) quarantined by the emulator (not JSON objects)`;
  if (!allowDuplicates && seen.duplicates > 0) return `${seen.duplicates} line(s) stored twice`;
  return null;
}

/** The first lines of the emulator's quarantine file for `ds` (`dataDir`: its data dir), quoted. */
export function quarantineSample(dataDir: string, ds: string): string[] {
  const f = path.join(dataDir, dataSourceFileName(ds, 'quarantine'));
  if (!existsSync(f)) return [];
  const text = readFileSync(f, 'utf8');
  // What follows the last newline may be a write half done.
  return text.slice(0, Math.max(0, text.lastIndexOf('\n'))).split('\n').filter(Boolean).slice(0, SAMPLE).map(quote);
}

/** The emulator's answers by outcome, e.g. `200 x12, 307 x3, reset x1` (requests for `ds` alone when given). */
export function answersByStatus(records: ReadonlyArray<{ name: string | null; outcome: number | string }>, ds?: string): string {
  const by = new Map<string, number>();
  for (const r of records) if (ds === undefined || r.name === ds) by.set(String(r.outcome), (by.get(String(r.outcome)) ?? 0) + 1);
  if (by.size === 0) return 'no request';
  return [...by].sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${k} x${n}`).join(', ');
}

/** A multi-line account of what a wait saw, for its error. */
export function describeDelivery(seen: RowsSeen, answers: string): string {
  const parts = [
    `${seen.rows} rows: ${seen.present} written lines present, ${seen.missing} missing, ${seen.duplicates} duplicates, ${seen.unexpected} unexpected, ${seen.quarantined ?? 0} quarantined`,
    `answers: ${answers}`,
  ];
  if (seen.sampleMissing.length) parts.push(`missing, first: ${JSON.stringify(seen.sampleMissing)}`);
  if (seen.sampleUnexpected.length) parts.push(`unexpected, first: ${JSON.stringify(seen.sampleUnexpected)}`);
  if (seen.sampleQuarantined?.length) parts.push(`quarantined (${seen.quarantined}), first: ${JSON.stringify(seen.sampleQuarantined)}`);
  if (seen.sampleDuplicates.length) parts.push(`duplicated, first: ${JSON.stringify(seen.sampleDuplicates)}`);
  return parts.join('\n  ');
}
