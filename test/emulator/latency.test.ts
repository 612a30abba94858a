// `latencyMs` delays every Events and cluster API answer; `uploadBytesPerSec`
// paces how fast request bodies are read. Both wait on the emulator's timers,
// a manual clock here: a test sees how long each wait is, and advances it.
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/index.js';
import { ManualClock } from '../support/manual-clock.js';
import { ndjson, nextWait, postEvents, readStored, scriptedRandom, startEmu, tempDir } from './helpers.js';

/** Advances `clock` through every wait until `pending` settles; returns the time advanced. */
async function advanceUntil(clock: ManualClock, pending: Promise<unknown>): Promise<number> {
  let settled = false;
  void pending.then(
    () => (settled = true),
    () => (settled = true),
  );
  let advanced = 0;
  while (!settled) {
    await new Promise((r) => setTimeout(r, 1));
    const next = clock.nextWakeInMs();
    if (next === null) continue;
    clock.advance(next);
    advanced += next;
  }
  return advanced;
}

describe('answer latency', () => {
  it('delays successes, early refusals and cluster answers by latencyMs', async () => {
    const clock = new ManualClock();
    const emu = await startEmu({ latencyMs: 250, timers: clock });
    const ok = postEvents(emu, { body: ndjson(2) });
    expect(await nextWait(clock)).toBe(250);
    clock.advance(250);
    expect((await ok).status).toBe(200);
    const refused = postEvents(emu, { token: 'nope' });
    expect(await nextWait(clock)).toBe(250);
    clock.advance(250);
    expect((await refused).status).toBe(403);
    const clusters = request(`${emu.url}/v0/organizations/${emu.org}/clusters`, { headers: { authorization: `Bearer ${emu.adminToken}` } });
    expect(await nextWait(clock)).toBe(250);
    clock.advance(250);
    const res = await clusters;
    await res.body.dump();
    expect(res.statusCode).toBe(200);
  });

  it('a MIN-MAX range is drawn per answer from random', async () => {
    const clock = new ManualClock();
    const emu = await startEmu({ latencyMs: { minMs: 0, maxMs: 1000 }, random: scriptedRandom([0.3, 0]), timers: clock });
    const first = postEvents(emu);
    expect(await nextWait(clock)).toBe(300); // 0 + floor(0.3 * 1001)
    clock.advance(300);
    expect((await first).status).toBe(200);
    // 0 ms: answered without the clock moving.
    expect((await postEvents(emu)).status).toBe(200);
  });

  it('adds to a slow fault', async () => {
    const clock = new ManualClock();
    const emu = await startEmu({ latencyMs: 150, faults: [{ kind: 'slow', delay_ms: 100 }], timers: clock });
    const res = postEvents(emu);
    expect(await nextWait(clock)).toBe(100);
    clock.advance(100);
    expect(await nextWait(clock)).toBe(150);
    clock.advance(150);
    expect((await res).status).toBe(200);
  });

  it('close() drops a request waiting out its latency', async () => {
    let seen!: () => void;
    const answered = new Promise<void>((resolve) => (seen = resolve));
    const emu = await startEmu({ latencyMs: 600_000, onEventsRequest: () => seen() });
    const pending = postEvents(emu);
    await answered;
    await emu.close();
    await expect(pending).rejects.toThrow();
  });

  it('onEventsArrival marks a request in flight from its body read until onEventsRequest records it', async () => {
    const events: string[] = [];
    let arrived!: () => void;
    const inFlight = new Promise<void>((resolve) => (arrived = resolve));
    const emu = await startEmu({
      faults: [{ kind: 'slow', delay_ms: 200 }],
      onEventsArrival: (at) => {
        events.push(`arrived ${at}`);
        arrived();
      },
      onEventsRequest: (r) => events.push(`recorded ${r.at}`),
    });
    const pending = postEvents(emu);
    await inFlight;
    expect(events, 'arrived, not yet answered').toHaveLength(1);
    expect((await pending).status).toBe(200);
    const at = events[0]!.split(' ')[1];
    expect(events, 'the record carries the arrival\'s at').toEqual([`arrived ${at}`, `recorded ${at}`]);
  });

  it('settled() waits for a request whose body has arrived to be recorded, not for its answer', async () => {
    let arrived!: () => void;
    const inFlight = new Promise<void>((resolve) => (arrived = resolve));
    const clock = new ManualClock();
    const emu = await startEmu({ latencyMs: 600_000, faults: [{ kind: 'slow', delay_ms: 200 }], recordRequests: true, onEventsArrival: () => arrived(), timers: clock });
    expect(await Promise.race([emu.settled().then(() => 'settled'), new Promise((r) => setImmediate(() => r('waiting')))]), 'nothing under way').toBe('settled');
    const pending = postEvents(emu);
    pending.catch(() => {}); // close() drops it while it waits out its latency
    await inFlight;
    const settled = emu.settled();
    expect(await nextWait(clock), 'the slow fault').toBe(200);
    expect(emu.requests(), 'arrived, still being handled').toHaveLength(0);
    clock.advance(200);
    await settled;
    expect(emu.requests().map((r) => r.outcome)).toEqual([200]);
    expect(await nextWait(clock), 'the answer waits out its latency').toBe(600_000);
  });

  it('rejects a range with MIN above MAX', async () => {
    await expect(startEmulator({ listen: '127.0.0.1:0', latencyMs: { minMs: 5, maxMs: 2 } })).rejects.toMatchObject({ code: 'SPOOLSHIP_ERR_EMULATOR_OPTIONS' });
    await expect(startEmulator({ listen: '127.0.0.1:0', uploadBytesPerSec: 0 })).rejects.toMatchObject({ code: 'SPOOLSHIP_ERR_EMULATOR_OPTIONS' });
  });
});

describe('upload pacing', () => {
  it('reads a body no faster than uploadBytesPerSec and stores it intact', async () => {
    const dir = await tempDir();
    const clock = new ManualClock();
    const emu = await startEmu({ dataDir: dir, uploadBytesPerSec: 100_000, timers: clock });
    const body = ndjson(5000); // ~58 KB: ~0.58 s to read
    expect(body.length).toBeGreaterThan(50_000);
    const pending = postEvents(emu, { body });
    const advanced = await advanceUntil(clock, pending);
    expect((await pending).json()).toEqual({ successful_rows: 5000, quarantined_rows: 0 });
    // Each chunk is held back until its schedule: the whole body takes its length / rate (a last wait under 1 ms is skipped).
    const scheduleMs = (body.length * 1000) / 100_000;
    expect(advanced).toBeGreaterThan(scheduleMs - 1);
    expect(advanced).toBeLessThanOrEqual(scheduleMs + 0.001);
    expect(await readStored(dir, 'events')).toBe(body);
    expect(emu.stats().bytes_in).toBe(body.length);
  });

  it('close() drops a body being paced', async () => {
    const emu = await startEmu({ uploadBytesPerSec: 1 });
    const pending = postEvents(emu, { body: ndjson(100) });
    // The pace holds the body back for minutes; wait until the first bytes were read.
    while (emu.stats().bytes_in === 0) await new Promise((r) => setImmediate(r));
    await emu.close();
    await expect(pending).rejects.toThrow();
  });
});
