// Retries are logged once per streak (docs/answers.md): a WARN `retrying` when
// the first request fails, an INFO `retry_streak_over` once requests succeed
// and none has failed for STREAK_QUIET_MS. A flapping API (every 4th request
// answered 503, during a bisection too) is one streak: it logged a WARN and
// an INFO per failed request, 30 pairs for one 400 episode.
import { describe, expect, it } from 'vitest';
import type { Logger } from '../../src/log.js';
import { RetryStreak, STREAK_QUIET_MS } from '../../src/observe/retry-streak.js';
import { ManualClock } from '../support/manual-clock.js';

function recorder() {
  const lines: Array<Record<string, unknown>> = [];
  const log = { warn: (o: Record<string, unknown>) => lines.push({ level: 'warn', ...o }), info: (o: Record<string, unknown>) => lines.push({ level: 'info', ...o }) } as unknown as Logger;
  return { lines, log };
}

describe('RetryStreak', () => {
  it('a flapping API is one streak: one WARN, then one INFO with every retry once none failed for the quiet time', () => {
    const clock = new ManualClock();
    const r = recorder();
    const s = new RetryStreak(() => r.log, clock);
    for (let i = 0; i < 30; i++) {
      s.retry('5xx', 'app', 'HTTP 503');
      clock.advance(100);
      s.success();
      s.success();
      s.success();
      s.tick();
      clock.advance(100);
    }
    expect(r.lines.map((l) => l.event)).toEqual(['retrying']);
    // The last failure was 200 ms ago.
    clock.advance(STREAK_QUIET_MS - 201);
    s.tick();
    expect(r.lines).toHaveLength(1);
    clock.advance(1);
    s.tick();
    expect(r.lines.map((l) => l.event)).toEqual(['retrying', 'retry_streak_over']);
    expect(r.lines[1]).toMatchObject({ level: 'info', retries: 30, by_reason: { '5xx': 30 } });
    // The next failure is a new streak.
    s.retry('network', 'app', 'ECONNRESET: socket hang up');
    expect(r.lines.map((l) => l.event)).toEqual(['retrying', 'retry_streak_over', 'retrying']);
  });

  it('a success long after the last failure (an outage retried with backoff) ends the streak at once; without a success it goes on; at stop it ends if requests succeeded', () => {
    const clock = new ManualClock();
    const r = recorder();
    const s = new RetryStreak(() => r.log, clock);
    s.retry('network', 'app');
    clock.advance(STREAK_QUIET_MS * 3);
    s.tick();
    expect(r.lines).toHaveLength(1); // no success yet: the outage goes on
    s.success();
    expect(r.lines.map((l) => l.event)).toEqual(['retrying', 'retry_streak_over']);
    s.retry('5xx', 'app');
    s.success();
    s.flush();
    expect(r.lines.map((l) => l.event)).toEqual(['retrying', 'retry_streak_over', 'retrying', 'retry_streak_over']);
    s.retry('5xx', 'app');
    s.flush();
    expect(r.lines).toHaveLength(5); // failing at the stop: not over
  });
});
