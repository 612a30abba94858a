import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DeadLetterStore } from '../../src/deadletter/store.js';

describe('DeadLetterStore', () => {
  it('stores one awaited add after another (each resolves, none waits forever)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-dls-'));
    try {
      const store = new DeadLetterStore(dir, 1e9, () => new Date('2026-11-24T00:00:00Z'), () => undefined);
      await store.open();
      // A plain awaited loop: an add that never resolves hangs here (and the
      // test times out); racing it against a timer added microtask turns that
      // hid exactly that bug.
      for (let i = 0; i < 5; i++) {
        const r = await store.add({ datasource: 'ev', reason: 'operator', file: null, offset: null, bytes: 1, status: null, line: Buffer.from(String(i)) });
        expect(r).toBe('stored');
      }
      expect((await readFile(path.join(dir, 'ev.ndjson'), 'utf8')).trim().split('\n')).toHaveLength(5);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
