import { statfsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DeadLetterStore, type DeadLetterInput } from '../../src/deadletter/store.js';
import type { Logger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { deadLetterDropped } from '../../src/observe/state-events.js';
import { reserveFor } from '../../src/queue/disk-room.js';
import { mountTmpfs } from '../support/tmpfs.js';

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

  it('a full store drops lines with one ERROR per stretch of drops, not one per line; every drop is counted', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-dls-'));
    try {
      const errors: Array<Record<string, unknown>> = [];
      const log = { error: (o: Record<string, unknown>) => errors.push(o) } as unknown as Logger;
      const metrics = createMetrics();
      const line = (i: number): DeadLetterInput => ({ datasource: 'ev', reason: 'invalid_json', file: null, offset: null, bytes: 40, status: null, line: Buffer.from(`not json ${i} ${'x'.repeat(30)}`) });
      const store = new DeadLetterStore(dir, 600, () => new Date('2026-11-24T00:00:00Z'), deadLetterDropped(metrics, log, 600));
      await store.open();
      const results: string[] = [];
      for (let i = 0; i < 20; i++) results.push(await store.add(line(i)));
      const stored = results.filter((r) => r === 'stored').length;
      expect(stored).toBeGreaterThan(0);
      expect(stored).toBeLessThan(20);
      expect(errors).toEqual([expect.objectContaining({ event: 'dead_letter_full', datasource: 'ev', max_bytes: 600 })]);
      const dropped = async () => (await metrics.registry.getSingleMetric('spoolship_dead_letter_dropped_total')!.get()).values[0]!.value;
      expect(await dropped()).toBe(20 - stored);
      // Room again (a purge), then full again: a new stretch, a new ERROR.
      await rm(path.join(dir, 'ev.ndjson'));
      await store.recount();
      for (let i = 0; i < 20; i++) await store.add(line(i));
      expect(errors).toHaveLength(2);
      expect(await dropped()).toBe(2 * (20 - stored));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('DeadLetterStore on a small volume (real tmpfs)', () => {
  it("leaves the disk queue's reserve free: dead letters meet a full disk (ENOSPC, the disk_full state) before the volume is full", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'spoolship-dls-'));
    const dir = path.join(root, 'dead-letter');
    await mkdir(dir);
    const unmount = mountTmpfs(dir, '1m');
    try {
      const store = new DeadLetterStore(dir, 1e9, () => new Date('2026-11-24T00:00:00Z'), () => undefined);
      await store.open();
      const line = (i: number): DeadLetterInput => ({ datasource: 'ev', reason: 'invalid_json', file: null, offset: i, bytes: 4000, status: null, line: Buffer.from(`not json ${i} ${'x'.repeat(4000)}`) });
      let err: unknown = null;
      for (let i = 0; i < 1000 && !err; i++) await store.add(line(i)).catch((e: unknown) => (err = e));
      expect(err).toMatchObject({ code: 'ENOSPC' });
      // What acknowledging the queue's batches needs is still there (queue/disk-room.ts).
      const st = statfsSync(dir);
      expect(st.bavail * st.bsize).toBeGreaterThanOrEqual(reserveFor(st.blocks * st.bsize));
    } finally {
      unmount();
      await rm(root, { recursive: true, force: true });
    }
  });
});
