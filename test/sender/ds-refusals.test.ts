// Per-Data-Source refusals (sender/ds-refusals.ts) on a manual clock: a 403
// parks only its Data Source when the same token was accepted for another
// within the proof window, the whole budget otherwise; an operator's move
// releases the park.
import { describe, expect, it } from 'vitest';
import { DataSourceRefusals, TOKEN_PROOF_WINDOW_MS, type DsParkReason } from '../../src/sender/ds-refusals.js';
import { Notifier } from '../../src/sender/notifier.js';
import { PARK_PROBE_INTERVAL_MS } from '../../src/sender/park.js';
import { ManualClock } from '../support/manual-clock.js';

function refusals() {
  const clock = new ManualClock();
  const changes: Array<{ ds: string; reason: DsParkReason | null; previous: DsParkReason | null; detail: string | null }> = [];
  const r = new DataSourceRefusals(clock, new Notifier(), (ds, reason, previous, detail) => changes.push({ ds, reason, previous, detail }));
  return { clock, r, changes };
}

describe('DataSourceRefusals', () => {
  it('a 403 with nothing proving the token parks the budget, not the Data Source', () => {
    const { r } = refusals();
    expect(r.on403('ghost')).toBe('budget');
    expect(r.refused('ghost')).toBe(true);
  });

  it('a 403 parks only its Data Source when the token was accepted for another one within the proof window', () => {
    const { clock, r } = refusals();
    r.accepted('events');
    clock.advance(TOKEN_PROOF_WINDOW_MS);
    expect(r.on403('ghost')).toBe('datasource');
    expect(r.refused('ghost')).toBe(true);
    expect(r.refused('events')).toBe(false);
  });

  it('past the proof window the acceptance proves nothing: the budget parks', () => {
    const { clock, r } = refusals();
    r.accepted('events');
    clock.advance(TOKEN_PROOF_WINDOW_MS + 1);
    expect(r.on403('ghost')).toBe('budget');
  });

  it("an acceptance for the same Data Source proves nothing about it: only another one's counts", () => {
    const { r } = refusals();
    r.accepted('ghost');
    expect(r.on403('ghost')).toBe('budget');
  });

  it('a Data Source refused since its acceptance proves nothing (the token may have been revoked)', () => {
    const { clock, r } = refusals();
    r.accepted('events');
    clock.advance(1000);
    expect(r.on403('events')).toBe('budget');
    expect(r.on403('ghost')).toBe('budget');
    clock.advance(1000);
    r.accepted('events');
    expect(r.on403('ghost')).toBe('datasource');
  });

  it('parks report their reason and detail per Data Source, and parked() lists them', () => {
    const { r, changes } = refusals();
    r.park('ghost').park('datasource_rejected');
    r.park('bad').park('bad_request');
    expect(r.parked()).toEqual(new Map([['ghost', 'datasource_rejected'], ['bad', 'bad_request']]));
    expect(changes.map((c) => [c.ds, c.reason, c.previous])).toEqual([
      ['ghost', 'datasource_rejected', null],
      ['bad', 'bad_request', null],
    ]);
    expect(changes.every((c) => typeof c.detail === 'string' && c.detail.length > 0)).toBe(true);
    r.park('ghost').unpark();
    expect(changes.at(-1)).toEqual({ ds: 'ghost', reason: null, previous: 'datasource_rejected', detail: null });
    expect(r.parked()).toEqual(new Map([['bad', 'bad_request']]));
  });

  it('find() makes no park; park() makes one on first use and keeps it', () => {
    const { r } = refusals();
    expect(r.find('ds')).toBeUndefined();
    const p = r.park('ds');
    expect(r.find('ds')).toBe(p);
    expect(r.park('ds')).toBe(p);
    expect(r.waitMs('other')).toBe(0);
  });

  it("an operator's move releases the park when none of the Data Source's batches waits", () => {
    const { r } = refusals();
    r.park('ds').park('bad_request');
    r.operatorMoved('ds', false);
    expect(r.parked().has('ds')).toBe(false);
  });

  it("with one of its batches still waiting, an operator's move keeps the park and lets that one probe now", () => {
    const { r } = refusals();
    r.park('ds').park('bad_request');
    expect(r.waitMs('ds')).toBe(PARK_PROBE_INTERVAL_MS);
    r.operatorMoved('ds', true);
    expect(r.parked().get('ds')).toBe('bad_request');
    expect(r.waitMs('ds')).toBe(0);
    expect(r.find('ds')!.tryProbe()).toBe(true);
  });

  it('an operator move for a Data Source not parked changes nothing', () => {
    const { r, changes } = refusals();
    r.operatorMoved('ds', false);
    expect(r.find('ds')).toBeUndefined();
    expect(changes).toEqual([]);
  });

  it('wake() lets every parked Data Source probe now (SIGHUP, a new token file)', () => {
    const { r } = refusals();
    r.park('a').park('datasource_rejected');
    r.park('b').park('bad_request');
    r.wake();
    expect(r.waitMs('a')).toBe(0);
    expect(r.waitMs('b')).toBe(0);
  });
});
