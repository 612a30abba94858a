import { appendFile, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ACKS_COMPACT_MIN, RetryQueue, SEGMENT_BYTES, type QueuedHeader } from '../../src/queue/retry-queue.js';
import { readQueueRecords } from '../../src/report/queue-reader.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});
async function qdir(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), 'spoolship-q-'));
  dirs.push(d);
  return path.join(d, 'queue');
}
const header = (id: number): QueuedHeader => ({ id, ds: 'ds', encoding: 'zstd', rawLen: 100, lines: 3, queuedAt: 1000 + id });

describe('RetryQueue', () => {
  it('keeps acks.log bounded while the queue keeps cycling (a long outage), and stays consistent across a reopen', async () => {
    const dir = await qdir();
    // Small segments: records cycle through many of them, as days of an outage would through 64 MiB ones.
    const q = await RetryQueue.open(dir, 1 << 30, () => undefined, { segmentBytes: 4096 });
    const sizes: number[] = [];
    for (let i = 1; i <= 5 * ACKS_COMPACT_MIN; i++) {
      await q.append(header(i), Buffer.alloc(200, i % 251));
      const r = await q.take();
      await q.ack(r!.ref);
      if (i % ACKS_COMPACT_MIN === 0) sizes.push((await stat(path.join(dir, 'acks.log'))).size);
    }
    await q.append(header(999_999), Buffer.from('left'));
    await q.close();
    // Each ack is a few dozen bytes: never far past ACKS_COMPACT_MIN of them.
    const oneAck = sizes[0]! / ACKS_COMPACT_MIN;
    expect(Math.max(...sizes), `acks.log sizes ${sizes.join(', ')}`).toBeLessThanOrEqual(2 * ACKS_COMPACT_MIN * oneAck + 64);
    const again = await RetryQueue.open(dir, 1 << 30, () => undefined, { segmentBytes: 4096 });
    expect(again.batches).toBe(1);
    expect((await again.take())?.header.id).toBe(999_999);
    await again.close();
  });

  it('keeps records across reopen, hands them out oldest first with the exact bytes, and forgets acknowledged ones', async () => {
    const dir = await qdir();
    const corrupt: string[] = [];
    const q = await RetryQueue.open(dir, 1 << 30, (w) => corrupt.push(w));
    const bodies = [Buffer.from('first body'), Buffer.alloc(70_000, 7), Buffer.from([0, 1, 2, 255])];
    for (let i = 0; i < bodies.length; i++) await q.append(header(i + 1), bodies[i]!);
    expect(q.batches).toBe(3);
    const a = await q.take();
    expect(a?.header).toEqual(header(1));
    expect(a?.body.equals(bodies[0]!)).toBe(true);
    await q.ack(a!.ref);
    const b = await q.take(); // taken, not acknowledged: still there after a restart
    expect(b?.header.id).toBe(2);
    await q.close();

    const q2 = await RetryQueue.open(dir, 1 << 30, (w) => corrupt.push(w));
    expect(q2.batches).toBe(2);
    const again = await q2.take();
    expect(again?.header.id).toBe(2);
    expect(again?.body.equals(bodies[1]!)).toBe(true);
    const c = await q2.take();
    expect(c?.body.equals(bodies[2]!)).toBe(true);
    expect(await q2.take()).toBeNull();
    await q2.ack(again!.ref);
    await q2.ack(c!.ref);
    expect(q2.batches).toBe(0);
    expect(q2.bytes).toBe(0);
    await q2.close();
    expect(corrupt).toEqual([]);
  });

  it('reports damaged acknowledgement records in acks.log (the file, the byte ranges), in the queue and in its read-only view, before acks.log is rewritten', async () => {
    const dir = await qdir();
    const q = await RetryQueue.open(dir, 1 << 30, () => undefined);
    for (let i = 1; i <= 3; i++) await q.append(header(i), Buffer.from(`body ${i}`));
    for (let i = 0; i < 2; i++) await q.ack((await q.take())!.ref);
    await q.close();
    // One byte of the first ack's payload changed: its CRC fails, and it is not the last record (no torn tail).
    const acksFile = path.join(dir, 'acks.log');
    const acks = await readFile(acksFile);
    acks[9] = acks[9]! ^ 0x01;
    await writeFile(acksFile, acks);
    const seen: Array<{ file: string; ranges: Array<{ start: number; end: number }> }> = [];
    const view = await readQueueRecords(dir, { onAcksDamaged: (file, ranges) => seen.push({ file, ranges: [...ranges] }) });
    // Which batch the damaged ack acknowledged cannot be told: the batch comes back (listed), and that is said.
    expect(view.map((r) => r.header?.id)).toEqual([1, 3]);
    const again = await RetryQueue.open(dir, 1 << 30, () => undefined, { onAcksDamaged: (file, ranges) => seen.push({ file, ranges: [...ranges] }) });
    expect(again.batches).toBe(2);
    await again.close();
    // The first ack: an 8-byte frame header (length, CRC), then its payload.
    const damaged = { file: acksFile, ranges: [{ start: 0, end: 8 + acks.readUInt32LE(0) }] };
    expect(seen).toEqual([damaged, damaged]);
    // Told once: the rewritten acks.log holds the good ack only.
    const third = await RetryQueue.open(dir, 1 << 30, () => undefined, { onAcksDamaged: (file, ranges) => seen.push({ file, ranges: [...ranges] }) });
    await third.close();
    expect(seen).toHaveLength(2);
  });

  it('cuts a torn tail at open and reports it as torn (cut quietly, not counted as corrupt); the records before it survive', async () => {
    const dir = await qdir();
    const q = await RetryQueue.open(dir, 1 << 30, () => undefined);
    await q.append(header(1), Buffer.from('whole'));
    await q.append(header(2), Buffer.from('also whole'));
    await q.close();
    const seg = (await readdir(dir)).find((n) => n.startsWith('seg-'))!;
    // A crash in the middle of a write: half a record at the end.
    await appendFile(path.join(dir, seg), Buffer.from([200, 0, 0, 0, 1, 2, 3, 4, 5, 6]));
    const corrupt: Array<[string, boolean]> = [];
    const q2 = await RetryQueue.open(dir, 1 << 30, (w, torn) => corrupt.push([w, torn === true]));
    expect(corrupt).toEqual([[expect.stringMatching(/^torn tail of segment/), true]]);
    expect(q2.batches).toBe(2);
    expect((await q2.take())?.body.toString()).toBe('whole');
    expect((await q2.take())?.body.toString()).toBe('also whole');
    await q2.append(header(3), Buffer.from('after the cut'));
    await q2.close();
    const q3 = await RetryQueue.open(dir, 1 << 30, () => undefined);
    expect(q3.batches).toBe(3);
    await q3.close();
  });

  it('skips a record whose CRC does not match, counts it, and goes on', async () => {
    const dir = await qdir();
    const q = await RetryQueue.open(dir, 1 << 30, () => undefined);
    await q.append(header(1), Buffer.from('will be damaged'));
    await q.append(header(2), Buffer.from('fine'));
    await q.close();
    const seg = path.join(dir, (await readdir(dir)).find((n) => n.startsWith('seg-'))!);
    const data = await readFile(seg);
    data[data.indexOf('damaged')] ^= 0xff;
    await writeFile(seg, data);
    const corrupt: string[] = [];
    const q2 = await RetryQueue.open(dir, 1 << 30, (w) => corrupt.push(w));
    const rec = await q2.take();
    expect(rec?.body.toString()).toBe('fine');
    expect(corrupt).toHaveLength(1);
    expect(q2.batches).toBe(1);
    await q2.close();
  });

  it('a damaged length field mid-segment: the queue and the read-only view (status, queue list) both skip that record and keep the ones after it', async () => {
    const dir = await qdir();
    const q = await RetryQueue.open(dir, 1 << 30, () => undefined);
    await q.append(header(1), Buffer.from('first'));
    const damaged = await q.append(header(2), Buffer.from('its length field is damaged'));
    await q.append(header(3), Buffer.from('third'));
    await q.append(header(4), Buffer.from('fourth'));
    await q.close();
    const seg = path.join(dir, (await readdir(dir)).find((n) => n.startsWith('seg-'))!);
    const data = await readFile(seg);
    data.writeUInt32LE(0x00ffffff, damaged.off); // runs past the end of the segment
    await writeFile(seg, data);

    const view = await readQueueRecords(dir);
    expect(view.map((r) => r.header?.id)).toEqual([1, 3, 4]);
    const corrupt: string[] = [];
    const q2 = await RetryQueue.open(dir, 1 << 30, (w) => corrupt.push(w));
    expect(corrupt).toEqual([expect.stringMatching(/^damaged record in segment \d+ at offset \d+/)]);
    expect((await q2.list()).map((r) => r.header.id)).toEqual([1, 3, 4]);
    expect(view.map((r) => [r.seg, r.off, r.len, r.bodyBytes])).toEqual((await q2.list()).map((r) => [r.ref.seg, r.ref.off, r.len, r.bodyBytes]));
    await q2.close();
  });

  it('is bounded by max_bytes, and deletes a segment once every record in it is acknowledged', async () => {
    const dir = await qdir();
    const q = await RetryQueue.open(dir, 3 * SEGMENT_BYTES, () => undefined);
    const big = Buffer.alloc(SEGMENT_BYTES - 1024, 1);
    expect(q.hasRoom(big.length)).toBe(true);
    await q.append(header(1), big);
    await q.append(header(2), big); // does not fit in segment 1: segment 2
    expect((await readdir(dir)).filter((n) => n.startsWith('seg-'))).toHaveLength(2);
    expect(q.hasRoom(big.length)).toBe(true);
    await q.append(header(3), big);
    expect(q.hasRoom(big.length)).toBe(false);
    const first = await q.take();
    await q.ack(first!.ref);
    expect((await readdir(dir)).filter((n) => n.startsWith('seg-'))).toHaveLength(2);
    expect(q.hasRoom(big.length)).toBe(true);
    const segSizes = await Promise.all((await readdir(dir)).filter((n) => n.startsWith('seg-')).map((n) => stat(path.join(dir, n))));
    expect(segSizes.every((s) => s.size > 0)).toBe(true);
    await q.close();
  });

  it('concurrent appends get their own offsets, and concurrent takes never hand out the same record', async () => {
    const dir = await qdir();
    const q = await RetryQueue.open(dir, 1 << 30, () => undefined);
    await Promise.all(Array.from({ length: 20 }, (_, i) => q.append(header(i), Buffer.from(`body-${i}`))));
    const taken = await Promise.all(Array.from({ length: 25 }, () => q.take()));
    const bodies = taken.filter((t) => t !== null).map((t) => t!.body.toString());
    expect(bodies.sort()).toEqual(Array.from({ length: 20 }, (_, i) => `body-${i}`).sort());
    await q.close();
  });
});
