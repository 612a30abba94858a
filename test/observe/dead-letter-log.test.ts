// What the sender's dead-letter writes become in the log (SPEC section 7:
// "never one per line"): a batch's refused lines are one write and one
// event, and a trickle of refused lines (a line per batch) is not one WARN
// per line: the first write is logged at once with its batch, the rest of
// the minute summed per Data Source and reason.
import { describe, expect, it } from 'vitest';
import { COUNT_LOG_INTERVAL_MS } from '../../src/observe/count-log.js';
import type { Part, RootBatch } from '../../src/sender/sender.js';
import { senderEvents } from './helpers.js';

const root = (id: number): RootBatch => ({ id, ds: 'ds', body: Buffer.from('{}\n'), encoding: null, rawLen: 3, lines: 1 });
const piece = (): { part: Part; raw: Buffer } => ({ part: { ds: 'ds', body: Buffer.from('{}\n'), encoding: null, rawLen: 3, lines: 1, lineStart: 0 }, raw: Buffer.from('{}\n') });

describe('dead_letters_written', () => {
  it('a trickle of refused lines: the first write at once, with its batch; then one summed event a minute', async () => {
    const { logs, ev, clock, counts } = senderEvents();
    const written = () => logs.filter((l) => l.event === 'dead_letters_written');
    for (let id = 1; id <= 5; id++) await ev.deadLetterLines(root(id), [piece()], 'rejected', 400);
    expect(written()).toEqual([expect.objectContaining({ level: 40, datasource: 'ds', reason: 'rejected', status: 400, batch: 1, count: 1, lines: 1 })]);
    clock.advance(COUNT_LOG_INTERVAL_MS);
    counts.flush();
    expect(written()).toHaveLength(2);
    expect(written()[1]).toMatchObject({ level: 40, datasource: 'ds', reason: 'rejected', count: 4, writes: 4 });
    expect(written()[1]).not.toHaveProperty('batch');
  });

  it('lines the full store dropped are logged at once, every time', async () => {
    const { logs, ev } = senderEvents({ deadLetterLines: async () => ({ stored: 0, lines: 1 }) });
    for (let id = 1; id <= 2; id++) await ev.deadLetterLines(root(id), [piece()], 'rejected', 400);
    expect(logs.filter((l) => l.event === 'dead_letters_written')).toEqual([
      expect.objectContaining({ batch: 1, count: 0, lines: 1, dropped: 1 }),
      expect.objectContaining({ batch: 2, count: 0, lines: 1, dropped: 1 }),
    ]);
  });
});
