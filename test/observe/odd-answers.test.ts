// Odd acknowledgements (#29 item 10): row counts that do not add up to the
// lines sent are one WARN per streak (until an acknowledgement whose counts
// add up) and a counter, spoolship_odd_answers_total{kind}, at 0 from the
// start for every kind.
import { describe, expect, it } from 'vitest';
import { senderEvents } from './helpers.js';

function events() {
  const { logs, ev, metrics } = senderEvents();
  const odd = async (kind: string) => {
    const text = await metrics.registry.metrics();
    const m = new RegExp(`^spoolship_odd_answers_total\\{kind="${kind}"\\} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : null;
  };
  return { logs, ev, odd };
}

describe('odd acknowledgements', () => {
  it('counts that do not add up: one WARN per streak, each counted; the counter exists at 0 for every kind before any', async () => {
    const { logs, ev, odd } = events();
    for (const kind of ['counts_mismatch', 'empty_body', 'accepted_under_wait', 'ignored_wait']) expect(await odd(kind), kind).toBe(0);
    const mismatch = (n: number) => {
      ev.onOddAnswer('counts_mismatch', 'ev', `successful_rows ${n}, quarantined_rows 0 for 5 lines sent`);
      ev.onAck('ev', 5, 100, 0);
    };
    mismatch(5000);
    mismatch(4000);
    mismatch(3000);
    ev.onCountsAddUp('ev');
    ev.onAck('ev', 5, 100, 0);
    mismatch(2000);
    await new Promise((r) => setImmediate(r));
    const warns = logs.filter((l) => l.event === 'odd_answer_counts_mismatch');
    expect(warns, 'a WARN when a streak of odd counts starts, none for the rest of it').toHaveLength(2);
    expect(warns.every((w) => w.level === 40)).toBe(true);
    expect(await odd('counts_mismatch')).toBe(4);
  });
});
