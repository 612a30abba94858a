// Where compressed bodies wait for their answers (src/pipeline/held-bodies.ts):
// in memory up to a bound, beyond it in unlinked files of state_dir/spill,
// read back byte for byte. Real files; the disk-full case on a real tmpfs
// (needs mount(2): tests run as root on Linux, CI too; without it the test
// fails saying so).
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { HeldBodies } from '../../src/pipeline/held-bodies.js';
import { captureLogs } from '../support/log-capture.js';
import { mountTmpfs } from '../support/tmpfs.js';
import { bodyBytes, SpilledBody, type Body } from '../../src/sender/body.js';
import { onCleanup, tempDir } from './helpers.js';
import { noise } from '../support/noise.js';


async function chunksOf(body: SpilledBody): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of body.chunks()) parts.push(c);
  return Buffer.concat(parts);
}

describe('HeldBodies', () => {
  it('keeps bodies in memory up to the bound and spills the next to unlinked files that read back byte for byte', async () => {
    const dir = path.join(await tempDir(), 'spill');
    await HeldBodies.prepare(dir);
    const gauge: number[] = [];
    const held = new HeldBodies({ dir, memoryBytes: 3_000_000, keep: 4, log: pino({ level: 'silent' }), onSpilled: (b) => gauge.push(b) });
    const a = noise(1_200_000, 1);
    const b = noise(1_200_000, 2);
    const c = noise(1_300_000, 3); // 3.7 MB with a and b: over the bound
    const ha = await held.hold([a], false);
    const hb = await held.hold([b], false);
    const hc = await held.hold([c], false);
    expect(Buffer.isBuffer(ha) && Buffer.isBuffer(hb)).toBe(true);
    expect(hc).toBeInstanceOf(SpilledBody);
    expect(hc.length).toBe(c.length);
    expect(held.bytes).toEqual({ inMemory: 2_400_000, spilled: 1_300_000 });
    expect(gauge).toEqual([1_300_000]);
    // The file has no name: nothing in the directory, nothing left by a crash.
    expect(readdirSync(dir)).toEqual([]);
    // Read whole (a split, the disk queue) and in steps (a request), as often as asked: the same bytes.
    expect((await bodyBytes(hc)).equals(c)).toBe(true);
    expect((await chunksOf(hc as SpilledBody)).equals(c)).toBe(true);
    expect((await chunksOf(hc as SpilledBody)).equals(c)).toBe(true);
    expect((await bodyBytes(ha)).equals(a)).toBe(true);

    // Released, the memory counts no more: the next body stays in memory.
    held.release(ha);
    held.release(hc);
    expect(gauge).toEqual([1_300_000, 0]);
    const hd = await held.hold([noise(1_500_000, 4)], false);
    expect(Buffer.isBuffer(hd)).toBe(true);
    expect(held.bytes).toEqual({ inMemory: 2_700_000, spilled: 0 });
    // A spilled body read after its release fails: its file is gone.
    await expect(bodyBytes(hc)).rejects.toThrow();
  });

  it('with a bound of 0 spills every body, the batch\'s own memory too (codec none); kept in memory, that is not copied', async () => {
    const dir = path.join(await tempDir(), 'spill');
    await HeldBodies.prepare(dir);
    const own = noise(100_000, 5);
    const spillAll = new HeldBodies({ dir, memoryBytes: 0, keep: 4, log: pino({ level: 'silent' }) });
    const s = await spillAll.hold([own], true);
    expect(s).toBeInstanceOf(SpilledBody);
    own.fill(0); // the batch buffer goes back to the batcher and is reused: the spilled body keeps its bytes
    expect((await bodyBytes(s)).equals(noise(100_000, 5))).toBe(true);
    spillAll.release(s);
    const inMemory = new HeldBodies({ dir, memoryBytes: 1_000_000, keep: 4, log: pino({ level: 'silent' }) });
    const m = await inMemory.hold([own], true);
    expect(m).toBe(own);
    // A body larger than the bound stays in memory when it is the only one (a 10 MB batch with codec none); the next is spilled.
    const big = noise(2_000_000, 9);
    const small = new HeldBodies({ dir, memoryBytes: 1_000_000, keep: 4, log: pino({ level: 'silent' }) });
    expect(await small.hold([big], true)).toBe(big);
    expect(await small.hold([noise(10_000, 10)], false)).toBeInstanceOf(SpilledBody);
  });

  it('prepare() empties the directory of files a crash left between open and unlink', async () => {
    const dir = path.join(await tempDir(), 'spill');
    mkdirSync(dir);
    writeFileSync(path.join(dir, '4242-7.body'), 'left over');
    await HeldBodies.prepare(dir);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a full file system leaves bodies in memory, with one WARN, and spills again once there is room (real tmpfs)', async () => {
    const dir = path.join(await tempDir(), 'spill');
    mkdirSync(dir);
    const unmount = mountTmpfs(dir, '1m');
    onCleanup(async () => unmount());
    const { log, logs: events } = captureLogs();
    const held = new HeldBodies({ dir, memoryBytes: 0, keep: 4, log });
    const big = [noise(1_500_000, 6), noise(1_500_000, 7)];
    const kept: Body[] = [];
    for (const b of big) kept.push(await held.hold([b], false));
    // Neither fits a 1 MB file system: both stay in memory, whole and correct.
    expect(kept.every((k) => Buffer.isBuffer(k))).toBe(true);
    expect(kept.map((k, i) => (k as Buffer).equals(big[i]!))).toEqual([true, true]);
    expect(events.filter((e) => e.event === 'body_spill_failed')).toHaveLength(1);
    expect(events.find((e) => e.event === 'body_spill_failed')).toMatchObject({ level: 40, dir });
    // What a failed spill wrote is gone: a small body fits again and is spilled.
    expect(readdirSync(dir)).toEqual([]);
    const small = noise(300_000, 8);
    const s = await held.hold([small], false);
    expect(s).toBeInstanceOf(SpilledBody);
    expect((await bodyBytes(s)).equals(small)).toBe(true);
    expect(events.filter((e) => e.event === 'body_spill_resumed')).toHaveLength(1);
    for (const k of [...kept, s]) held.release(k);
    expect(held.bytes).toEqual({ inMemory: 0, spilled: 0 });
  });
});
