// The reader's dead letters (pipeline/reader-letters.ts): a too-long line's
// record is written before its end, and the range that passes the line
// waits for that record. A record on disk is let go: one per file whose
// line never ends (its file forgotten) was kept for the agent's life.
import { describe, expect, it } from 'vitest';
import type { DeadLetterInput, DeadLetterStore } from '../../src/deadletter/store.js';
import type { Metrics } from '../../src/metrics/metrics.js';
import { ReaderLetters } from '../../src/pipeline/reader-letters.js';
import type { StateStore } from '../../src/state/store.js';

function harness() {
  const calls: string[] = [];
  let storeRecord!: () => void;
  const deadLetters = {
    add: (input: DeadLetterInput) => {
      calls.push(`record ${input.offset}`);
      return new Promise<'stored'>((resolve) => (storeRecord = () => resolve('stored')));
    },
  } as unknown as DeadLetterStore;
  const meta = { key: 'k', path: '/spool/ev/a.ndjson' };
  const store = {
    metaOf: () => meta,
    updateFile: (m: { lettered?: number }) => void calls.push(`lettered ${m.lettered}`),
    completeDeadLetterRange: (_key: string, e: { start: number; end: number }) => void calls.push(`range ${e.start}-${e.end}`),
    flush: async () => undefined,
  } as unknown as StateStore;
  const metrics = { linesDeadLettered: { inc: () => undefined } } as unknown as Metrics;
  const letters = new ReaderLetters(deadLetters, store, metrics, { retryStateWrite: (fn) => fn() });
  return { letters, calls, storeRecord: () => storeRecord() };
}

const input: DeadLetterInput = { datasource: 'ev', reason: 'line_too_long', file: '/spool/ev/a.ndjson', offset: 100, bytes: 5000, status: null, line: Buffer.from('x') };

describe('ReaderLetters', () => {
  it("a too-long line's range waits for its record; once the record is on disk nothing is kept for the line", async () => {
    const h = harness();
    const record = h.letters.add(input, 'k', null);
    expect(h.letters.pending).toBe(1);
    const range = h.letters.add(null, 'k', { start: 100, end: 5101 } as never);
    await new Promise((r) => setImmediate(r));
    expect(h.calls).toEqual(['record 100']);
    h.storeRecord();
    await Promise.all([record, range]);
    expect(h.calls).toEqual(['record 100', 'lettered 100', 'range 100-5101']);
    expect(h.letters.pending).toBe(0);
  });

  it('a line that never ends (its file finished or forgotten first) leaves nothing behind', async () => {
    const h = harness();
    const record = h.letters.add(input, 'k', null);
    h.storeRecord();
    await record;
    await new Promise((r) => setImmediate(r));
    expect(h.letters.pending).toBe(0);
  });
});
