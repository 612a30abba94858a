// What the retry queue's compaction says in the log (docs/delivery.md): a
// DEBUG per move or undone move, a WARN once compaction stops for good.
import { describe, expect, it } from 'vitest';
import { queueCompacted } from '../../src/observe/state-events.js';
import { captureLogs } from '../support/log-capture.js';

describe('queue compaction log', () => {
  it('a move and an undone move are DEBUG queue_compacted; a move that could not be undone is a WARN queue_compaction_stopped', () => {
    const { logs, log } = captureLogs({ level: 'debug' });
    const told = queueCompacted(log);
    told({ segment: 3, records: 2, outcome: 'done' });
    told({ segment: 4, records: 1, outcome: 'failed' });
    told({ segment: 4, records: 1, outcome: 'stuck' });
    expect(logs.map((l) => [l.event, l.level, l.segment, l.records, l.outcome])).toEqual([
      ['queue_compacted', 20, 3, 2, 'done'],
      ['queue_compacted', 20, 4, 1, 'failed'],
      ['queue_compaction_stopped', 40, 4, 1, undefined],
    ]);
  });
});
