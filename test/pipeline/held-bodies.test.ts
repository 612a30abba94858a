// Where compressed bodies wait for their answers (src/pipeline/held-bodies.ts):
// in memory up to a bound, beyond it in unlinked files of state_dir/spill,
// read back byte for byte. Real files; the disk-full case on a real tmpfs
// (needs mount(2): tests run as root on Linux, CI too; without it the test
// fails saying so), with the agent's own acker on a manual clock.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { HeldBodies } from '../../src/pipeline/held-bodies.js';
import { Acker, STATE_RETRY_MS } from '../../src/state/acker.js';
import type { StateWrites } from '../../src/state/acker.js';
import { ManualClock } from '../support/manual-clock.js';
import { captureLogs } from '../support/log-capture.js';
import { mountTmpfs } from '../support/tmpfs.js';
import { bodyBytes, SpilledBody, type Body } from '../../src/sender/body.js';
import { onCleanup, tempDir, waitFor } from './helpers.js';
import { noise } from '../support/noise.js';

/** State writes as they are while the state_dir takes them: each runs once. */
const writes: StateWrites = { retryStateWrite: (fn) => fn() };

/**
 * A 1 MB tmpfs as the spill directory, with the agent's own acker on a
 * manual clock: a body of 700 KB is spilled (`first`), and the next one does
 * not fit beside it.
 */
async function fullAfterOne(onWaitingChange?: () => void) {
  const dir = path.join(await tempDir(), 'spill');
  mkdirSync(dir);
  const unmount = mountTmpfs(dir, '1m');
  onCleanup(async () => unmount());
  const { log, logs: events } = captureLogs();
  const clock = new ManualClock();
  const faults: string[][] = [];
  const state = { journalBytes: 0, checkpointBytes: 0, flush: async () => undefined, checkpoint: async () => undefined };
  const acker = new Acker(state, { clock, log, stateDir: dir, events: { onFaultsChange: (f) => faults.push([...f]), onFatal: (err) => { throw err; } } });
  const held = new HeldBodies({ dir, memoryBytes: 0, keep: 4, log, writes: acker, onWaitingChange });
  const first = await held.hold([noise(700_000, 6)], false);
  return { clock, acker, held, events, faults, first };
}

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
    const held = new HeldBodies({ dir, memoryBytes: 3_000_000, keep: 4, log: pino({ level: 'silent' }), writes, onSpilled: (b) => gauge.push(b) });
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
    const spillAll = new HeldBodies({ dir, memoryBytes: 0, keep: 4, log: pino({ level: 'silent' }), writes });
    const s = await spillAll.hold([own], true);
    expect(s).toBeInstanceOf(SpilledBody);
    own.fill(0); // the batch buffer goes back to the batcher and is reused: the spilled body keeps its bytes
    expect((await bodyBytes(s)).equals(noise(100_000, 5))).toBe(true);
    spillAll.release(s);
    const inMemory = new HeldBodies({ dir, memoryBytes: 1_000_000, keep: 4, log: pino({ level: 'silent' }), writes });
    const m = await inMemory.hold([own], true);
    expect(m).toBe(own);
    // A body larger than the bound stays in memory when it is the only one (a 10 MB batch with codec none); the next is spilled.
    const big = noise(2_000_000, 9);
    const small = new HeldBodies({ dir, memoryBytes: 1_000_000, keep: 4, log: pino({ level: 'silent' }), writes });
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

  it('a full file system is the disk_full state: the hold waits, reported, and spills once an answered body frees room (real tmpfs)', async () => {
    let changes = 0;
    const { clock, held, events, faults, first: h1 } = await fullAfterOne(() => changes++);
    const second = noise(700_000, 7);
    expect(h1).toBeInstanceOf(SpilledBody);

    // The second does not fit beside the first: it waits, the fault reported once.
    let done: Body | null = null;
    const p2 = held.hold([second], false).then((b) => (done = b));
    await waitFor(() => clock.waiting === 1, 'the spill waits for a retry');
    expect(held.waitingForDisk).toBe(1);
    expect(changes).toBe(1);
    expect(faults).toEqual([['disk_full']]);
    // Still full one retry period later: still waiting, nothing in memory instead.
    clock.advance(STATE_RETRY_MS);
    await waitFor(() => clock.waiting === 1, 'the second try failed and waits again');
    expect(done).toBeNull();
    expect(held.bytes).toEqual({ inMemory: 0, spilled: 700_000 });

    // The first body is answered: its room comes back and the next try spills.
    held.release(h1);
    while (done === null) {
      clock.advance(STATE_RETRY_MS);
      await waitFor(() => done !== null || clock.waiting === 1, 'the retry ended');
    }
    const h2 = await p2;
    expect(h2).toBeInstanceOf(SpilledBody);
    expect((await bodyBytes(h2)).equals(second)).toBe(true);
    expect(faults).toEqual([['disk_full'], []]);
    expect(held.waitingForDisk).toBe(0);
    expect(changes).toBe(2);
    expect(events.filter((e) => e.event === 'body_spill_failed')).toEqual([]);
    expect(events.filter((e) => e.event === 'state_fault')).toHaveLength(1);
    held.release(h2);
    expect(held.bytes).toEqual({ inMemory: 0, spilled: 0 });
  });

  it('a hold waiting for room ends with the acker\'s destroy (DestroyedError), without a WARN or the body kept in memory', async () => {
    const { clock, acker, held, events, first: h1 } = await fullAfterOne();
    const waiting = held.hold([noise(700_000, 7)], false).then(
      () => 'held',
      (err: Error) => err.name,
    );
    await waitFor(() => clock.waiting === 1, 'the spill waits for a retry');
    await acker.destroy();
    expect(await waiting).toBe('DestroyedError');
    expect(held.waitingForDisk).toBe(0);
    expect(held.bytes).toEqual({ inMemory: 0, spilled: 700_000 });
    expect(events.filter((e) => e.event === 'body_spill_failed')).toEqual([]);
    held.release(h1);
  });

  it('any other failure to spill (the directory gone) leaves the body in memory, with one WARN, and spills again once it works', async () => {
    const dir = path.join(await tempDir(), 'spill');
    await HeldBodies.prepare(dir);
    const { log, logs: events } = captureLogs();
    const held = new HeldBodies({ dir, memoryBytes: 0, keep: 4, log, writes });
    rmSync(dir, { recursive: true });
    const big = [noise(500_000, 6), noise(500_000, 7)];
    const kept: Body[] = [];
    for (const b of big) kept.push(await held.hold([b], false));
    expect(kept.every((k) => Buffer.isBuffer(k))).toBe(true);
    expect(kept.map((k, i) => (k as Buffer).equals(big[i]!))).toEqual([true, true]);
    expect(events.filter((e) => e.event === 'body_spill_failed')).toHaveLength(1);
    expect(events.find((e) => e.event === 'body_spill_failed')).toMatchObject({ level: 40, dir });
    expect(held.waitingForDisk).toBe(0);
    mkdirSync(dir);
    const small = noise(300_000, 8);
    const s = await held.hold([small], false);
    expect(s).toBeInstanceOf(SpilledBody);
    expect((await bodyBytes(s)).equals(small)).toBe(true);
    expect(events.filter((e) => e.event === 'body_spill_resumed')).toHaveLength(1);
    for (const k of [...kept, s]) held.release(k);
    expect(held.bytes).toEqual({ inMemory: 0, spilled: 0 });
  });
});
