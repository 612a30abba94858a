// SenderEvents over a captured log, fresh metrics and a manual clock, for
// tests of what the sender's events become (log lines, metrics).
import { createMetrics } from '../../src/metrics/metrics.js';
import { CountLog } from '../../src/observe/count-log.js';
import { SenderEvents } from '../../src/observe/sender-events.js';
import { captureLogs } from '../support/log-capture.js';
import { ManualClock } from '../support/manual-clock.js';

export function senderEvents() {
  const { logs, log } = captureLogs();
  const metrics = createMetrics();
  const clock = new ManualClock(0);
  const ev = new SenderEvents({
    metrics,
    log,
    clock,
    counts: new CountLog(clock, () => log),
    maxBatchBytes: 1 << 20,
    api: () => 'http://127.0.0.1:1',
    parkedDataSources: () => new Map(),
    deadLetters: { deadLetterLines: async () => undefined },
  });
  return { logs, ev, metrics };
}
