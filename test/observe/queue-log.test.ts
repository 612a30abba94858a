// What the retry queue's compaction says in the log (docs/delivery.md): a
// DEBUG per move or undone move, a WARN once compaction stops for good.
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics/metrics.js';
import { QueueReport } from '../../src/observe/health.js';
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

describe('queue state log', () => {
  it('one queue_full per stretch of a full queue, however often the room comes and goes at the edge (a volume near the reserve), again after it drained', () => {
    const { logs, log } = captureLogs({ level: 'info' });
    const q = { batches: 3, bytes: 3000, diskBytes: 3000, room: false, hasRoom(): boolean { return this.room; }, limit: { by: 'disk' as const, room_bytes: 10, reserve_bytes: 65536 } };
    const report = new QueueReport(q, { metrics: createMetrics(), log, maxBatchBytes: 1000, maxQueueBytes: 1e9 });
    for (let i = 0; i < 6; i++) {
      q.room = i % 2 === 1;
      report.update();
    }
    q.batches = 0;
    report.update();
    q.batches = 2;
    q.room = false;
    report.update();
    expect(logs.map((l) => l.event)).toEqual(['queue_full', 'queue_drained', 'queue_full']);
  });

  it('a volume with some room, but less than a batch of batch.max_bytes: queue_full says so (the room and the batch size), not that the volume has none', () => {
    const { logs, log } = captureLogs({ level: 'info' });
    // 652 bytes queued, 3.9 MB of room, batches of up to 10 MB: a small batch still fits, a full one may not.
    const q = { batches: 1, bytes: 652, diskBytes: 652, hasRoom: (n: number) => n <= 3_900_000, limit: { by: 'disk' as const, room_bytes: 3_900_000, reserve_bytes: 65536 } };
    new QueueReport(q, { metrics: createMetrics(), log, maxBatchBytes: 10_000_000, maxQueueBytes: 1e9 }).update();
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({ event: 'queue_full', limited_by: 'disk', room_bytes: 3_900_000, batch_max_bytes: 10_000_000 });
    expect(logs[0]!.msg).toContain('room_bytes is less than a batch of batch.max_bytes');
  });
});
