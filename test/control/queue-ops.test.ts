// QueueOps.move in the window where a held batch leaves the sender for the
// disk queue: listed as held (parked), then deferred (its probe failed again)
// before its turn in the move. Stub parts, so the window is exact.
import { describe, expect, it } from 'vitest';
import { QueueOps, type QueueOpsDeps } from '../../src/control/queue-ops.js';
import type { QueuedHeader } from '../../src/queue/format.js';
import { ManualClock } from '../support/manual-clock.js';

const header: QueuedHeader = { id: 5, ds: 'ev', encoding: null, rawLen: 8, lines: 2, queuedAt: 0 };
const body = Buffer.from('{"a":1}\n');

function parts(o: { onItsWayToQueue: boolean }) {
  const moved: Array<{ id: number; raw: string }> = [];
  const forgotten: number[] = [];
  let listed = 0;
  const deps = {
    sender: {
      held: () => [{ root: { id: 5, ds: 'ev', body, encoding: null, rawLen: 8, lines: 2 }, parked: true, since: 0, history: { attempts: 1, lastStatus: 400, lastError: 'HTTP 400' } }],
      budgetPark: { parked: false },
      parkedDataSources: () => new Map([['ev', 'bad_request']]),
      history: () => null,
      // No longer being delivered by the time its turn comes.
      release: () => null,
      operatorMoved: () => undefined,
      forget: (id: number) => forgotten.push(id),
    },
    queue: {
      // First for the listing (the batch is held, not queued); then the record
      // shows up only after one more look (the append is under way).
      list: async () => (listed++ < 2 ? [] : [{ ref: { seg: 0, off: 0 }, len: 64, bodyBytes: body.length, header, leased: false }]),
      lease: () => true,
      readRecord: async () => ({ header, body }),
      release: () => undefined,
      ack: async () => undefined,
    },
    // The journal intent stays until the queue record is written; none once acknowledged.
    store: { intentRanges: () => (o.onItsWayToQueue ? [] : undefined), batchRanges: () => undefined, completeQueued: () => undefined, flush: async () => undefined },
    deadLetters: { room: 1_000_000, sizeOf: () => 10 },
    clock: new ManualClock(0),
    log: { warn: () => undefined, info: () => undefined },
    deadLetterPath: { deadLetterLines: async (id: number, _ds: string, pieces: ReadonlyArray<{ raw: Buffer }>) => void moved.push({ id, raw: Buffer.concat(pieces.map((p) => p.raw)).toString() }) },
    writes: { retryStateWrite: <T>(fn: () => Promise<T>) => fn() },
    onQueueChange: () => undefined,
    pathOf: () => undefined,
    deadLetterMaxBytes: 1_000_000,
    status: async () => null,
  } as unknown as QueueOpsDeps;
  return { ops: new QueueOps(deps), moved, forgotten, clock: deps.clock as ManualClock };
}

describe('QueueOps.move', () => {
  it('a held batch deferred to the disk queue before its turn is found there and moved, not reported moved with 0 lines', async () => {
    const { ops, moved, forgotten, clock } = parts({ onItsWayToQueue: true });
    let settled = false;
    const answer = ops.handle({ op: 'queue_dead_letter', ids: [], datasource: 'ev' }).finally(() => (settled = true));
    // The move polls (on the clock) while the record is not yet in the queue.
    while (!settled) {
      await new Promise((r) => setImmediate(r));
      if (clock.waiting > 0) clock.advance(50);
    }
    expect(await answer).toMatchObject({ ok: true, moved_batches: 1, moved_lines: 2 });
    expect(moved).toEqual([{ id: 5, raw: body.toString() }]);
    expect(forgotten, 'the sender forgets the moved batch').toEqual([5]);
  });

  it('a held batch acknowledged meanwhile (no intent, no record) moves nothing: 0 lines', async () => {
    const { ops, moved } = parts({ onItsWayToQueue: false });
    expect(await ops.handle({ op: 'queue_dead_letter', ids: [], datasource: 'ev' })).toMatchObject({ ok: true, moved_batches: 1, moved_lines: 0 });
    expect(moved).toEqual([]);
  });
});
