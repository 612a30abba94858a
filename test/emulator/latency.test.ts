// `latencyMs` delays every Events and cluster API answer; `uploadBytesPerSec`
// paces how fast request bodies are read. Only loose lower bounds on elapsed
// time are asserted (the machine may be slow, never faster than the delay).
import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/index.js';
import { ndjson, postEvents, readStored, scriptedRandom, startEmu, tempDir } from './helpers.js';

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const start = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - start };
}

describe('answer latency', () => {
  it('delays successes, early refusals and cluster answers by latencyMs', async () => {
    const emu = await startEmu({ latencyMs: 250 });
    const ok = await timed(() => postEvents(emu, { body: ndjson(2) }));
    expect(ok.value.status).toBe(200);
    expect(ok.ms).toBeGreaterThanOrEqual(200);
    const refused = await timed(() => postEvents(emu, { token: 'nope' }));
    expect(refused.value.status).toBe(403);
    expect(refused.ms).toBeGreaterThanOrEqual(200);
    const clusters = await timed(async () => {
      const res = await request(`${emu.url}/v0/organizations/${emu.org}/clusters`, { headers: { authorization: `Bearer ${emu.adminToken}` } });
      await res.body.dump();
      return res.statusCode;
    });
    expect(clusters.value).toBe(200);
    expect(clusters.ms).toBeGreaterThanOrEqual(200);
  });

  it('a MIN-MAX range is drawn per answer from random', async () => {
    const emu = await startEmu({ latencyMs: { minMs: 0, maxMs: 1000 }, random: scriptedRandom([0.3, 0]) });
    const first = await timed(() => postEvents(emu)); // 0 + floor(0.3 * 1001) = 300 ms
    expect(first.value.status).toBe(200);
    expect(first.ms).toBeGreaterThanOrEqual(250);
    expect((await postEvents(emu)).status).toBe(200); // 0 ms: answered at all
  });

  it('adds to a slow fault', async () => {
    const emu = await startEmu({ latencyMs: 150, faults: [{ kind: 'slow', delay_ms: 150 }] });
    const res = await timed(() => postEvents(emu));
    expect(res.value.status).toBe(200);
    expect(res.ms).toBeGreaterThanOrEqual(250);
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
    const emu = await startEmu({ latencyMs: 600_000, faults: [{ kind: 'slow', delay_ms: 200 }], recordRequests: true, onEventsArrival: () => arrived() });
    expect(await Promise.race([emu.settled().then(() => 'settled'), new Promise((r) => setImmediate(() => r('waiting')))]), 'nothing under way').toBe('settled');
    const pending = postEvents(emu);
    pending.catch(() => {}); // close() drops it while it waits out its latency
    await inFlight;
    expect(emu.requests(), 'arrived, still being handled').toHaveLength(0);
    await emu.settled();
    expect(emu.requests().map((r) => r.outcome)).toEqual([200]);
  });

    it('rejects a range with MIN above MAX', async () => {
    await expect(startEmulator({ listen: '127.0.0.1:0', latencyMs: { minMs: 5, maxMs: 2 } })).rejects.toMatchObject({ code: 'SPOOLSHIP_ERR_EMULATOR_OPTIONS' });
    await expect(startEmulator({ listen: '127.0.0.1:0', uploadBytesPerSec: 0 })).rejects.toMatchObject({ code: 'SPOOLSHIP_ERR_EMULATOR_OPTIONS' });
  });
});

describe('upload pacing', () => {
  it('reads a body no faster than uploadBytesPerSec and stores it intact', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir, uploadBytesPerSec: 100_000 });
    const body = ndjson(5000); // ~58 KB: at least ~0.5 s to read
    expect(body.length).toBeGreaterThan(50_000);
    const res = await timed(() => postEvents(emu, { body }));
    expect(res.value.json()).toEqual({ successful_rows: 5000, quarantined_rows: 0 });
    expect(res.ms).toBeGreaterThanOrEqual(400);
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
