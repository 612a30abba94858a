// SenderEvents over a captured log, fresh metrics and a manual clock, for
// tests of what the sender's events become (log lines, metrics).
import { createMetrics } from '../../src/metrics/metrics.js';
import { CountLog } from '../../src/observe/count-log.js';
import { SenderEvents, type BatchDeadLetters } from '../../src/observe/sender-events.js';
import { captureLogs } from '../support/log-capture.js';
import { ManualClock } from '../support/manual-clock.js';

/** `deadLetters`: where refused lines go (by default: nowhere, all of them counted as stored). */
export function senderEvents(deadLetters: BatchDeadLetters = { deadLetterLines: async (_id, _ds, pieces) => ({ stored: pieces.length, lines: pieces.length }) }) {
  const { logs, log } = captureLogs();
  const metrics = createMetrics();
  const clock = new ManualClock(0);
  const counts = new CountLog(clock, () => log);
  const ev = new SenderEvents({
    metrics,
    log,
    clock,
    counts,
    maxBatchBytes: 1 << 20,
    api: () => 'http://127.0.0.1:1',
    parkedDataSources: () => new Map(),
    deadLetters,
  });
  return { logs, ev, metrics, clock, counts };
}
