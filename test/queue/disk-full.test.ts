// The disk retry queue on a full file system (a real tmpfs; needs mount(2):
// tests run as root on Linux, CI too; without it the test fails saying so):
// spoolship_queue_bytes must count what the queue holds on disk. It read 0
// while a 3.1 MB segment sat on a full disk: the bytes of a record whose
// write failed (ENOSPC) stayed in the segment, counted nowhere and retried
// in place, and a drained queue kept its last segment with every record in
// it delivered.
import { mkdirSync, readdirSync, statSync, statfsSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics/metrics.js';
import { QueueReport } from '../../src/observe/health.js';
import { reserveFor } from '../../src/queue/disk-room.js';
import { RetryQueue, type QueuedHeader } from '../../src/queue/retry-queue.js';
import { mountTmpfs } from '../support/tmpfs.js';
import { noise } from '../support/noise.js';

const cleanups: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** A queue directory on its own tmpfs of `size` (mount's syntax), and a gauge fed by the agent's QueueReport. */
async function setup(size: string) {
  const root = await mkdtemp(path.join(os.tmpdir(), 'spoolship-qfull-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  const dir = path.join(root, 'queue');
  mkdirSync(dir);
  cleanups.push(mountTmpfs(dir, size));
  const corrupt: string[] = [];
  const q = await RetryQueue.open(dir, 1 << 30, (w) => corrupt.push(w));
  cleanups.push(() => q.close());
  const metrics = createMetrics();
  const report = new QueueReport(q, { metrics, log: pino({ level: 'silent' }), maxBatchBytes: 1_000_000, maxQueueBytes: 1 << 30 });
  const gauge = async () => {
    report.update();
    return (await metrics.queueBytes.get()).values[0]?.value;
  };
  const onDisk = () => readdirSync(dir).filter((n) => n.startsWith('seg-')).reduce((n, f) => n + statSync(path.join(dir, f)).size, 0);
  return { dir, q, corrupt, gauge, onDisk };
}

const header = (id: number, ds = 'ev'): QueuedHeader => ({ id, ds, encoding: 'zstd', rawLen: 100, lines: 3, queuedAt: 1000 + id });

describe('retry queue on a full file system (real tmpfs)', () => {
  it('a record the disk cannot take leaves nothing behind: the gauge and the segments on disk agree, and a reopen finds no damage', async () => {
    const s = await setup('3m');
    await s.q.append(header(1), noise(500_000, 1));
    // 3.1 MB do not fit beside 0.5 MB on 3 MiB: the write fails part way.
    await expect(s.q.append(header(2), noise(3_100_000, 2))).rejects.toMatchObject({ code: 'ENOSPC' });
    expect(await s.gauge()).toBe(s.onDisk());
    expect(s.onDisk()).toBeLessThan(600_000);
    // The space it took is free again: a smaller record fits and is read back whole.
    const small = noise(1_000_000, 3);
    await s.q.append(header(3), small);
    expect(await s.gauge()).toBe(s.onDisk());
    await s.q.close();
    const again = await RetryQueue.open(s.dir, 1 << 30, (w) => s.corrupt.push(w));
    cleanups.push(() => again.close());
    expect(s.corrupt).toEqual([]);
    expect(again.batches).toBe(2);
    expect((await again.take())?.header.id).toBe(1);
    const last = await again.take();
    expect(last?.header.id).toBe(3);
    expect(last?.body.equals(small)).toBe(true);
  });

  it('a drained queue keeps no segment: the gauge reads 0 and the space is free', async () => {
    const s = await setup('4m');
    await s.q.append(header(1), noise(3_100_000, 4));
    expect(await s.gauge()).toBe(s.onDisk());
    const r = await s.q.take();
    await s.q.ack(r!.ref);
    expect(await s.gauge()).toBe(0);
    expect(s.onDisk()).toBe(0);
    // The file system has the room back: another 3.1 MB fit.
    writeFileSync(path.join(s.dir, 'filler'), noise(3_100_000, 5));
    await s.q.append(header(2), noise(500_000, 6));
    expect(await s.gauge()).toBe(s.onDisk());
    expect(s.q.batches).toBe(1);
  });

  it('a queue larger than its volume stops short of it: a reserve stays free, and the acks of a segment larger than the volume fit in it', async () => {
    // A segment (an eighth of 1 GiB, at most 64 MiB) is larger than the volume.
    const s = await setup('2m');
    const free = () => {
      const st = statfsSync(s.dir);
      return st.bavail * st.bsize;
    };
    const reserve = reserveFor(statfsSync(s.dir).blocks * statfsSync(s.dir).bsize);
    let id = 0;
    while (s.q.hasRoom(100_000)) await s.q.append(header(++id), noise(100_000, id));
    expect(id).toBeGreaterThan(10);
    expect(s.q.limit).toMatchObject({ by: 'disk', reserve_bytes: reserve });
    expect(free()).toBeGreaterThanOrEqual(reserve);
    // Past the room, an append writes nothing: the disk_full state (ENOSPC), the reserve untouched.
    const before = s.onDisk();
    await expect(s.q.append(header(++id), noise(100_000, id))).rejects.toMatchObject({ code: 'ENOSPC' });
    expect(s.onDisk()).toBe(before);
    expect(free()).toBeGreaterThanOrEqual(reserve);
    // Every record acknowledged, one by one, out of the reserve: the one segment goes, and the room is back.
    for (let r = await s.q.take(); r; r = await s.q.take()) await s.q.ack(r.ref);
    expect(s.q.batches).toBe(0);
    expect(s.onDisk()).toBe(0);
    expect(s.q.hasRoom(100_000)).toBe(true);
  });

  it('segments stay a fraction of what the volume holds: a parked batch pins one of them, not the whole queue', async () => {
    // An eighth of 1 GiB is more than the volume: one segment would hold every record, and the parked one would keep it all.
    const s = await setup('2m');
    await s.q.append(header(1, 'parked'), noise(50_000, 1));
    let id = 1;
    while (s.q.hasRoom(50_000)) await s.q.append(header(++id), noise(50_000, id));
    expect(s.q.limit.by).toBe('disk');
    const full = s.onDisk();
    const passParked = (ds: string) => ds === 'parked';
    for (let r = await s.q.take(passParked); r; r = await s.q.take(passParked)) await s.q.ack(r.ref);
    expect(s.q.batches).toBe(1);
    expect(s.onDisk(), 'the delivered records gave their space back').toBeLessThan(full / 2);
    expect(s.q.hasRoom(50_000)).toBe(true);
    expect(await s.gauge()).toBe(s.onDisk());
  });
});
