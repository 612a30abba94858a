// The progress line of `spoolship send`: the bar follows what is acknowledged
// (or dead-lettered), not what was read ahead; the ETA carries its unit.
import { describe, expect, it } from 'vitest';
import { duration, renderProgress, retryText } from '../../src/one-shot/progress.js';

describe('send progress', () => {
  it('shows 45 % when everything is read and 45 % of it is acknowledged, with an ETA in seconds', () => {
    const text = renderProgress({ bytesRead: 1_000_000, bytesDone: 450_000, totalBytes: 1_000_000, linesAcked: 4500, linesDeadLettered: 0 }, 9);
    expect(text).toMatch(/^\[#{11}\.{13}\]  45%/);
    // 9 s for 45 %: 11 s to go.
    expect(text).toMatch(/ETA 11 s$/);
    expect(text).toContain('4,500 lines acked');
  });

  it('an ETA is unknown before anything is done, and durations read with units', () => {
    expect(renderProgress({ bytesRead: 10, bytesDone: 0, totalBytes: 100, linesAcked: 0, linesDeadLettered: 0 }, 1)).toMatch(/ETA unknown$/);
    expect([duration(0.2), duration(59), duration(61), duration(3599), duration(3600 * 2 + 7 * 60)]).toEqual(['1 s', '59 s', '1 min 01 s', '59 min 59 s', '2 h 07 min']);
  });

  it('a retry says its cause, and a 400 or 413 (no cause) what is done about it, never "undefined"', () => {
    expect(retryText('503', 'HTTP 503')).toBe('503: HTTP 503');
    expect(retryText('413', undefined)).toBe('HTTP 413: sending the batch in smaller pieces');
    expect(retryText('400', null)).toBe('HTTP 400: finding the rejected lines');
    expect(retryText('network', undefined)).toBe('network');
  });
});
