// /readyz's reasons (observe/health.ts) on a manual clock.
import { describe, expect, it } from 'vitest';
import { readiness, STALL_LINGER_PERIODS, type HealthSources } from '../../src/observe/health.js';
import { ManualClock } from '../support/manual-clock.js';

function sources(o: { parked: Record<string, string>; queued: string[]; active?: number | string[]; lastAckAt?: number; budgetPark?: string }): HealthSources {
  // `active`: a number of batches of Data Sources that are not parked, or each batch's Data Source.
  const active = typeof o.active === 'number' ? Array.from({ length: o.active }, () => 'ok') : (o.active ?? []);
  return {
    sender: { budgetPark: { reason: o.budgetPark ?? null }, parkedDataSources: () => new Map(Object.entries(o.parked)) },
    acker: { faults: [] },
    pipeline: { batchesActiveExcept: (ds) => active.filter((d) => !ds.has(d)).length, lastAckAt: o.lastAckAt ?? 0 },
    queue: {
      batches: o.queued.length,
      bytes: 0,
      hasRoom: () => true,
      batchesExcept: (ds) => o.queued.filter((d) => !ds.has(d)).length,
    },
  };
}

describe('readiness', () => {
  const lingerMs = 50;
  it('batches of a parked Data Source waiting in the queue are the park, not no_progress', () => {
    const clock = new ManualClock();
    const lastAckAt = clock.now();
    clock.advance(STALL_LINGER_PERIODS * lingerMs + 1);
    expect(readiness(sources({ parked: { gone: 'datasource_rejected' }, queued: ['gone', 'gone'], lastAckAt }), clock, lingerMs)).toEqual({
      ready: false,
      reasons: ['datasource_rejected'],
    });
    // A batch of a Data Source that is not parked waits too: that is no progress.
    expect(readiness(sources({ parked: { gone: 'datasource_rejected' }, queued: ['gone', 'ok'], lastAckAt }), clock, lingerMs).reasons).toEqual(['datasource_rejected', 'no_progress']);
    expect(readiness(sources({ parked: {}, queued: ['ok'], lastAckAt }), clock, lingerMs).reasons).toEqual(['no_progress']);
    // Its batches held in memory (the queue had no room for them) are its park too.
    expect(readiness(sources({ parked: { gone: 'datasource_rejected' }, queued: [], active: ['gone', 'gone'], lastAckAt }), clock, lingerMs).reasons).toEqual(['datasource_rejected']);
    expect(readiness(sources({ parked: { gone: 'datasource_rejected' }, queued: [], active: ['gone', 'ok'], lastAckAt }), clock, lingerMs).reasons).toEqual(['datasource_rejected', 'no_progress']);
  });

  it('a parked budget is its own reason, not no_progress as well (it holds every batch)', () => {
    const clock = new ManualClock();
    const lastAckAt = clock.now();
    clock.advance(STALL_LINGER_PERIODS * lingerMs + 1);
    for (const budgetPark of ['token_rejected', 'workspace_not_found', 'unexpected_response']) {
      expect(readiness(sources({ parked: {}, queued: ['ok'], active: 3, lastAckAt, budgetPark }), clock, lingerMs)).toEqual({ ready: false, reasons: [budgetPark] });
    }
  });

  it('no_progress only after STALL_LINGER_PERIODS linger periods without an acknowledgement', () => {
    const clock = new ManualClock();
    const lastAckAt = clock.now();
    clock.advance(STALL_LINGER_PERIODS * lingerMs);
    expect(readiness(sources({ parked: {}, queued: [], active: 1, lastAckAt }), clock, lingerMs)).toEqual({ ready: true, reasons: [] });
    clock.advance(1);
    expect(readiness(sources({ parked: {}, queued: [], active: 1, lastAckAt }), clock, lingerMs).reasons).toEqual(['no_progress']);
  });
});
