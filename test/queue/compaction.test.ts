// The retry queue's files stay near queue.max_bytes when a few records pin
// many segments: a parked Data Source's batches waited in every segment
// while the others' flowed through, and each segment kept its delivered
// records on disk until its last record went (a 60 KB queue grew to 131 KB,
// and nothing bounded it). Compaction moves the waiting records to the tail
// and deletes the segment; a crash at any step of it leaves every batch
// there exactly once, for the queue and for the read-only view alike.
import { cpSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RetryQueue, type QueuedHeader } from '../../src/queue/retry-queue.js';
import { readQueueRecords } from '../../src/report/queue-reader.js';
import { noise } from '../support/noise.js';
import { mountTmpfs } from '../support/tmpfs.js';

const cleanups: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function root(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), 'spoolship-qc-'));
  cleanups.push(() => rm(d, { recursive: true, force: true }));
  return d;
}

const header = (id: number, ds: string): QueuedHeader => ({ id, ds, encoding: 'zstd', rawLen: 100, lines: 3, queuedAt: 1000 + id });
const onDisk = (dir: string) => readdirSync(dir).filter((n) => n.startsWith('seg-')).reduce((n, f) => n + statSync(path.join(dir, f)).size, 0);
const PARKED_BODY = (id: number) => noise(1000, id);

/**
 * `rounds` times: a record of the parked Data Source, then one of the
 * flowing one, taken (passing the parked one over) and acknowledged. The
 * parked records' ids (1, 3, 5, ...) go into `parked` as they are appended.
 */
async function parkedAmongFlowing(q: RetryQueue, rounds: number, onRound: () => void = () => undefined, parked: number[] = []): Promise<number[]> {
  for (let i = 0; i < rounds; i++) {
    const id = 2 * i + 1;
    await q.append(header(id, 'parked'), PARKED_BODY(id));
    parked.push(id);
    await q.append(header(id + 1, 'flowing'), noise(3000, id + 1));
    const r = await q.take((ds) => ds === 'parked');
    expect(r?.header.ds).toBe('flowing');
    await q.ack(r!.ref);
    onRound();
  }
  return parked;
}

/** Every record of the queue taken: their ids, each body checked against what was appended. */
async function drainIds(q: RetryQueue): Promise<number[]> {
  const ids: number[] = [];
  for (let r = await q.take(); r; r = await q.take()) {
    expect(r.body.equals(PARKED_BODY(r.header.id)), `body of ${r.header.id}`).toBe(true);
    ids.push(r.header.id);
  }
  return ids.sort((a, b) => a - b);
}

describe('retry queue compaction', () => {
  it('keeps the files within max_bytes plus two segments while a parked Data Source pins every segment; nothing is lost or doubled, across a reopen too', async () => {
    const dir = path.join(await root(), 'queue');
    const maxBytes = 64 * 1024; // segments of 8 KiB
    const compacted: Array<{ segment: number; records: number; outcome: string }> = [];
    const q = await RetryQueue.open(dir, maxBytes, () => undefined, { onCompacted: (e) => compacted.push(e) });
    let peak = 0;
    const parked = await parkedAmongFlowing(q, 40, () => (peak = Math.max(peak, onDisk(dir))));
    // Each move is told (the agent logs it: queue_compacted), with the records it moved.
    expect(compacted.length).toBeGreaterThan(0);
    for (const e of compacted) expect(e).toMatchObject({ outcome: 'done', records: expect.any(Number) });
    expect(compacted.every((e) => e.records >= 1)).toBe(true);
    // Without compaction: ~170 KB, every segment held by one parked record.
    expect(peak).toBeLessThanOrEqual(maxBytes + 2 * 8192);
    expect(q.diskBytes).toBe(onDisk(dir));
    expect(q.batches).toBe(40);
    expect((await readQueueRecords(dir)).map((r) => r.header!.id).sort((a, b) => a - b)).toEqual(parked);
    await q.close();
    const again = await RetryQueue.open(dir, maxBytes, () => undefined);
    expect(again.batches).toBe(40);
    expect(await drainIds(again)).toEqual(parked);
    await again.close();
  });

  it('a crash after the copies are written, or after the segment is deleted, leaves every batch once (queue and read-only view)', async () => {
    const base = await root();
    const dir = path.join(base, 'queue');
    const snaps = new Map<string, { dir: string; ids: number[] }>();
    const parked: number[] = [];
    const q = await RetryQueue.open(dir, 64 * 1024, () => undefined, {
      // The disk as a kill -9 at that instant leaves it (every write before it was fsync'd).
      onCompactStep: (step) => {
        if (snaps.has(step)) return;
        const snap = path.join(base, `crash-${step}`);
        cpSync(dir, snap, { recursive: true });
        snaps.set(step, { dir: snap, ids: [...parked] });
      },
    });
    await parkedAmongFlowing(q, 30, undefined, parked);
    await q.close();
    expect([...snaps.keys()].sort()).toEqual(['copied', 'dropped']);
    for (const [step, snap] of snaps) {
      const expected = snap.ids;
      const view = (await readQueueRecords(snap.dir)).map((r) => r.header!.id).sort((a, b) => a - b);
      const reopened = await RetryQueue.open(snap.dir, 64 * 1024, () => undefined);
      expect(view, `read-only view after a crash at ${step}`).toEqual(expected);
      expect(await drainIds(reopened), `queue after a crash at ${step}`).toEqual(expected);
      await reopened.close();
      expect(readdirSync(snap.dir), `${step}: the marker is resolved at open`).not.toContain('compact.json');
    }
  });

  it('an unreadable compact.json beside its segment stops the open, naming the file and the way out; one whose segment is gone is cleared', async () => {
    const dir = path.join(await root(), 'queue');
    const q = await RetryQueue.open(dir, 64 * 1024, () => undefined);
    await q.append(header(1, 'parked'), PARKED_BODY(1));
    await q.close();
    writeFileSync(path.join(dir, 'compact.json'), '{"v":1,"from":');
    const expected = { code: 'SPOOLSHIP_ERR_QUEUE_MARKER_CORRUPT', message: expect.stringMatching(/compact\.json cannot be read .*move the file away/) };
    await expect(RetryQueue.open(dir, 64 * 1024, () => undefined)).rejects.toMatchObject(expected);
    await expect(readQueueRecords(dir)).rejects.toMatchObject(expected);
    // Naming a segment that is gone: the copies are the records, nothing to resolve.
    writeFileSync(path.join(dir, 'compact.json'), JSON.stringify({ v: 1, from: 999, at: { seg: 1, off: 0 }, ids: [1] }));
    const again = await RetryQueue.open(dir, 64 * 1024, () => undefined);
    expect(await drainIds(again)).toEqual([1]);
    await again.close();
    expect(readdirSync(dir)).not.toContain('compact.json');
  });

  it('a compaction the full disk cuts short is undone: the segment stays, no copy is left, and the queue goes on (real tmpfs)', async () => {
    const base = await root();
    const dir = path.join(base, 'queue');
    mkdirSync(dir);
    cleanups.push(mountTmpfs(dir, '256k'));
    const maxBytes = 160 * 1024; // segments of 20 KiB
    const outcomes: string[] = [];
    const q = await RetryQueue.open(dir, maxBytes, () => undefined, { onCompacted: (e) => outcomes.push(e.outcome) });
    cleanups.push(() => q.close());
    // Parked records pin segments (one ack first: acks.log has its page).
    const parked: number[] = [];
    for (let i = 0; i < 12; i++) {
      const id = 2 * i + 1;
      await q.append(header(id, 'parked'), PARKED_BODY(id));
      parked.push(id);
      await q.append(header(id + 1, 'flowing'), noise(4000, id + 1));
    }
    const passParked = (ds: string) => ds === 'parked';
    const first = await q.take(passParked);
    await q.ack(first!.ref);
    // Then the disk fills up, one page left: the marker fits, the copies do not.
    const chunks: string[] = [];
    for (let i = 0; ; i++) {
      const f = path.join(dir, `filler-${i}`);
      try {
        writeFileSync(f, Buffer.alloc(4096, 1));
        chunks.push(f);
      } catch {
        break;
      }
    }
    rmSync(chunks.pop()!);
    for (let r = await q.take(passParked); r; r = await q.take(passParked)) await q.ack(r.ref);
    expect(readdirSync(dir)).not.toContain('compact.json');
    expect(outcomes).toContain('failed');
    expect(outcomes).not.toContain('done');
    expect(q.batches).toBe(12);
    expect(q.diskBytes).toBe(onDisk(dir));
    expect((await readQueueRecords(dir)).map((r) => r.header!.id).sort((a, b) => a - b)).toEqual(parked);
    // Space again: the next ack compacts.
    const pinned = onDisk(dir);
    for (const f of chunks) rmSync(f);
    await q.append(header(1000, 'flowing'), noise(100, 1000));
    await q.ack((await q.take(passParked))!.ref);
    // Delivered bytes kept: at most a segment's worth, and those of the segment being written.
    expect(onDisk(dir)).toBeLessThan(pinned);
    expect(outcomes.at(-1)).toBe('done');
    expect(onDisk(dir)).toBeLessThanOrEqual(q.bytes + 2 * 20 * 1024);
    expect(q.diskBytes).toBe(onDisk(dir));
    await q.close();
    const again = await RetryQueue.open(dir, maxBytes, () => undefined);
    cleanups.push(() => again.close());
    expect(await drainIds(again)).toEqual(parked);
  });
});
