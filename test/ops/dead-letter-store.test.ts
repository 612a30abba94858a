import { statfsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { crashWindowOf } from '../../src/deadletter/recent.js';
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

describe('DeadLetterStore across a restart', () => {
  const at = new Date('2026-11-24T00:00:00Z');
  const input = (over: Partial<DeadLetterInput> = {}): DeadLetterInput => ({ datasource: 'ev', reason: 'invalid_json', file: '/spool/ev/a.ndjson', offset: 100, bytes: 8, status: null, line: Buffer.from('not json'), fileKey: '1:2:0', ...over });
  /** A state as crashWindowOf reads it: each file's progress (one object for the file's life) and its committed offset. */
  const state = (files: Record<string, number>) => {
    const progress = new Map(Object.entries(files).map(([k, committed]) => [k, { committed }]));
    return { progress, file: (k: string) => progress.get(k) };
  };
  async function reopened(dir: string, st = state({ '1:2:0': 0, '1:3:0': 0 })): Promise<DeadLetterStore> {
    const store = new DeadLetterStore(dir, 1e9, () => at, () => undefined);
    await store.open(crashWindowOf(st));
    return store;
  }
  const records = async (dir: string) => (await readFile(path.join(dir, 'ev.ndjson'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { file_key?: string; offset: number | null; line: string });
  const shown = async (dir: string) => (await records(dir)).map((r) => `${r.file_key ?? '-'}@${r.offset} ${r.line}`);

  it('does not write again a record it holds at its end: the same line of the same file at the same place once; another line, place or file, or a record without one, is written', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-dls-'));
    try {
      const first = await reopened(dir);
      await first.add(input());
      await first.add(input({ file: null, offset: null, fileKey: undefined }));
      const second = await reopened(dir);
      expect(await second.add(input())).toBe('stored');
      // Matched once: a third copy is a line read a third time in this run, written.
      await second.add(input());
      await second.add(input({ offset: 200 }));
      await second.add(input({ line: Buffer.from('not json!'), bytes: 9 }));
      // The same path, another file (a new inode): written.
      await second.add(input({ fileKey: '1:3:0' }));
      await second.add(input({ file: null, offset: null, fileKey: undefined }));
      expect(await shown(dir)).toEqual(['1:2:0@100 not json', '-@null not json', '1:2:0@100 not json', '1:2:0@200 not json', '1:2:0@100 not json!', '1:3:0@100 not json', '-@null not json']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('remembers only the crash window: a file the state knows, at or past its committed offset, and only while the state holds that same file', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-dls-'));
    try {
      const first = await reopened(dir);
      for (const fileKey of ['1:2:0', '1:3:0', '1:4:0']) await first.add(input({ fileKey }));
      // 1:2:0 passed the line already (committed 150); 1:4:0 unknown; 1:3:0 in the window, then forgotten and followed anew (a reused inode).
      const st = state({ '1:2:0': 150, '1:3:0': 100 });
      const second = await reopened(dir, st);
      st.progress.set('1:3:0', { committed: 0 });
      for (const fileKey of ['1:2:0', '1:3:0', '1:4:0']) await second.add(input({ fileKey }));
      expect(await shown(dir)).toHaveLength(6);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('does not take a last record without its newline (torn by a crash) for a stored one', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-dls-'));
    try {
      await (await reopened(dir)).add(input());
      const text = await readFile(path.join(dir, 'ev.ndjson'), 'utf8');
      await writeFile(path.join(dir, 'ev.ndjson'), text.slice(0, -1));
      const second = await reopened(dir);
      await second.add(input());
      // The torn one and the new one (glued to it: the fragment stays unreadable, never replayed as a copy).
      expect((await readFile(path.join(dir, 'ev.ndjson'), 'utf8')).split('"offset":100').length - 1).toBe(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('forgets what it held once a replay or purge recounts it (the records may be gone)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-dls-'));
    try {
      await (await reopened(dir)).add(input());
      const second = await reopened(dir);
      await rm(path.join(dir, 'ev.ndjson'));
      await second.recount();
      await second.add(input());
      expect(await records(dir)).toHaveLength(1);
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
