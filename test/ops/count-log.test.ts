import { describe, expect, it } from 'vitest';
import { CountLog, COUNT_LOG_INTERVAL_MS } from '../../src/observe/count-log.js';
import type { Logger } from '../../src/log.js';
import { ManualClock } from '../support/manual-clock.js';

function recorder() {
  const lines: Array<Record<string, unknown>> = [];
  const log = { warn: (o: Record<string, unknown>) => lines.push(o) } as unknown as Logger;
  return { lines, log };
}

describe('CountLog', () => {
  it('logs the first count at once, then sums per Data Source for at most one line a minute', () => {
    const clock = new ManualClock();
    const r = recorder();
    const c = new CountLog(clock, () => r.log);
    c.add('rows_quarantined', { datasource: 'a' }, 3, 'm');
    c.add('rows_quarantined', { datasource: 'a' }, 4, 'm');
    c.add('rows_quarantined', { datasource: 'b' }, 1, 'm');
    expect(r.lines).toEqual([
      { event: 'rows_quarantined', datasource: 'a', count: 3 },
      { event: 'rows_quarantined', datasource: 'b', count: 1 },
    ]);
    clock.advance(COUNT_LOG_INTERVAL_MS - 1);
    c.add('rows_quarantined', { datasource: 'a' }, 5, 'm');
    c.flush();
    expect(r.lines).toHaveLength(2);
    clock.advance(1);
    c.flush();
    expect(r.lines.at(-1)).toEqual({ event: 'rows_quarantined', datasource: 'a', count: 9 });
    c.add('rows_quarantined', { datasource: 'a' }, 2, 'm');
    c.flush(true); // at stop: everything pending
    expect(r.lines.at(-1)).toEqual({ event: 'rows_quarantined', datasource: 'a', count: 2 });
    expect(r.lines).toHaveLength(4);
  });
});
