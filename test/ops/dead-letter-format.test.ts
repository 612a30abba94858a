import { describe, expect, it } from 'vitest';
import { encodeRecord, parseEntries } from '../../src/deadletter/files.js';
import type { DeadLetterRecord } from '../../src/deadletter/store.js';

const rec: DeadLetterRecord = { datasource: 'ev', reason: 'rejected', file: '/s/a.ndjson', offset: 10, bytes: 9, at: '2026-11-24T12:00:00.000Z', status: 400, line: '{"bad":1}' };

describe('dead-letter record format (version 2: v and crc32)', () => {
  it('round-trips, and a record changed on disk is unreadable (never replayed as it is)', () => {
    const line = encodeRecord(rec);
    expect(line).toMatch(/^\{"datasource":"ev".*,"v":2,"crc32":"[0-9a-f]{8}"\}$/);
    expect(parseEntries(`${line}\n`)).toEqual([{ raw: line, rec: { ...rec, v: 2, crc32: expect.any(String) } }]);
    const tampered = line.replace('{\\"bad\\":1}', '{\\"bad\\":2}');
    expect(tampered).not.toBe(line);
    expect(parseEntries(`${tampered}\n`)[0]!.rec).toBeNull();
  });

  it('reads version 1 lines (no CRC) as they are', () => {
    const v1 = JSON.stringify(rec);
    expect(parseEntries(`${v1}\n`)[0]!.rec).toEqual(rec);
  });
});
