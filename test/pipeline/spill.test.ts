// Compressed bodies spilled to state_dir/spill (src/pipeline/held-bodies.ts)
// go every way a body in memory goes: sent, retried byte for byte, split on a
// 400, moved to the disk queue. The agent runs in-process against the real
// emulator with a bound of 0 bytes in memory, so every body is spilled. The
// full-disk case puts state_dir/spill on a real tmpfs (needs root, as
// test/support/tmpfs.ts says).
import { mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { noise } from '../support/noise.js';
import { mountTmpfs } from '../support/tmpfs.js';
import type { Emulator } from '../../src/emulator/index.js';
import { READ_BUFFER_BYTES } from '../../src/spool/read-loop.js';
import { configFor, expectByteIdenticalRetries, onCleanup, expectExactlyOnce, gauge, jsonLines, rows, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines } from './helpers.js';

/** Sample a gauge every 5 ms until stopped; resolves with the largest value seen. */
function sampleMax(read: () => Promise<number>): { stop: () => Promise<number> } {
  let max = 0;
  let on = true;
  const loop = (async () => {
    while (on) {
      max = Math.max(max, await read());
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  return {
    stop: async () => {
      on = false;
      await loop;
      return max;
    },
  };
}

describe('spilled bodies', () => {
  it('are sent byte-identical on every retry: partially stored batches are completed by the dedup, never stored twice', async () => {
    const dir = await tempDir();
    // Each answer takes 40 ms, so bodies wait (spilled) for their answers;
    // every third request stores half its rows and answers 500.
    const emu = await startEmu(dir, { latencyMs: 40 });
    emu.setFaults([{ kind: 'partial', status: 500, every: 3 }]);
    const config = configFor(dir, emu, { batch: { max_bytes: 20_000 }, limits: { max_in_flight: 8 } });
    const lines = jsonLines('s', 0, 6000, 20);
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    const { agent, stop } = await startAgent(config, { bodiesInMemoryBytes: 0 });
    const spilled = sampleMax(() => gauge(agent, 'spoolship_spilled_body_bytes'));
    await waitForRows(emu, dir, 'ev', lines, 'all rows');
    const maxSpilled = await spilled.stop();
    await waitFor(async () => (await gauge(agent, 'spoolship_spilled_body_bytes')) === 0, 'every spilled body released');
    await stop();
    expect(maxSpilled).toBeGreaterThan(0);
    expect(emu.requests().filter((r) => r.outcome === 500).length).toBeGreaterThan(5);
    expect(expectByteIdenticalRetries(emu.requests()), 'spilled bodies sent again').toBeGreaterThanOrEqual(3);
    expectExactlyOnce(rows(emu, dir, 'ev'), lines);
    expect(readdirSync(path.join(dir, 'state', 'spill'))).toEqual([]);
  });

  it('a 400 splits a spilled body and isolates the rejected lines; every other line arrives once', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    emu.setFaults([{ kind: 'reject_marker', marker: 'POISON' }]);
    const good = jsonLines('p', 0, 2000);
    const lines = [...good.slice(0, 700), '{"id":"POISON-1"}', ...good.slice(700, 1500), '{"id":"POISON-2"}', ...good.slice(1500)];
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    const config = configFor(dir, emu, { batch: { max_bytes: 40_000 } });
    const { agent, stop } = await startAgent(config, { bodiesInMemoryBytes: 0 });
    await waitForRows(emu, dir, 'ev', good, 'all good rows');
    await waitFor(async () => (await gauge(agent, 'spoolship_lines_dead_lettered_total', '{datasource="ev",reason="rejected"}')) === 2, 'two dead letters');
    await stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), good);
    expect(emu.stats().requests_by_status['400']).toBeGreaterThan(2);
  });

  it('a spilled batch whose quick attempts fail moves to the disk queue with its bytes, and arrives once from there', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    emu.setFaults([{ kind: 'status', status: 503 }]);
    const config = configFor(dir, emu, { batch: { max_bytes: 20_000 } });
    const lines = jsonLines('q', 0, 2000);
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    const { agent, stop } = await startAgent(config, { bodiesInMemoryBytes: 0 });
    await waitFor(async () => (await gauge(agent, 'spoolship_queue_batches')) >= 3, 'batches queued during the outage');
    expect(rows(emu, dir, 'ev')).toEqual([]);
    emu.setFaults([]);
    await waitForRows(emu, dir, 'ev', lines, 'all rows');
    await waitFor(async () => (await gauge(agent, 'spoolship_queue_batches')) === 0, 'queue drained');
    await stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), lines);
  });

  /**
   * A spool whose bodies (~55 KB each, batches of `maxBytes`) do not all fit
   * state_dir/spill: a tmpfs with room for about two; the journal and
   * checkpoints are on the ordinary file system. Answers take 100 ms (`o`:
   * another latency, another max_in_flight).
   */
  async function smallSpillDir(count: number, maxBytes: number, o: { latencyMs?: number; maxInFlight?: number } = {}) {
    const dir = await tempDir();
    const spill = path.join(dir, 'state', 'spill');
    mkdirSync(spill, { recursive: true });
    const unmount = mountTmpfs(spill, '150k');
    onCleanup(async () => unmount());
    const emu = await startEmu(dir, { latencyMs: o.latencyMs ?? 100 });
    const config = configFor(dir, emu, { batch: { max_bytes: maxBytes }, limits: { max_in_flight: o.maxInFlight ?? 8 }, shutdown_timeout_ms: 3000 });
    // Lines that compress to about half: hex of bytes that do not repeat.
    const lines = Array.from({ length: count }, (_, i) => JSON.stringify({ id: `f-${i}`, r: noise(120, i + 1).toString('hex') }));
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    return { dir, spill, emu, config, lines };
  }

  it('a spill that meets a full disk is the disk_full state: reported, the reader waits, and every line arrives once when answers free room', async () => {
    const maxBytes = 100_000;
    // Answers in 500 ms keep the spilled bodies' room taken for a while, and
    // 64 in flight leave the pipeline's other bounds loose: a reader that did
    // not wait for the spill read on through each episode (~2 MB).
    const { dir, spill, emu, config, lines } = await smallSpillDir(12_000, maxBytes, { latencyMs: 500, maxInFlight: 64 });
    const logs: Array<Record<string, unknown>> = [];
    const { agent, stop } = await startAgent(config, { bodiesInMemoryBytes: 0, logs });
    // Every 5 ms: how much did the reader read while the agent was parked
    // for a full disk (from the first sample of each episode)? A short
    // episode may fall between samples: the logs say whether there was one.
    // An episode ends at its state_fault_cleared: on a busy machine two
    // samples may see disk_full with a clear (and legitimate reading) between
    // them, so a clear logged since the episode's first sample starts a new one.
    let readWhileFull = 0;
    let on = true;
    const clears = (): number => logs.filter((l) => l.event === 'state_fault_cleared').length;
    const sampler = (async () => {
      let from = null as { read: number; clears: number } | null;
      while (on) {
        const seenClears = clears();
        const full = await gauge(agent, 'spoolship_parked', '{reason="disk_full"}');
        const read = await gauge(agent, 'spoolship_bytes_read_total', '{datasource="ev"}');
        if (full === 1 && clears() === seenClears) {
          if (from?.clears !== seenClears) from = { read, clears: seenClears };
          readWhileFull = Math.max(readWhileFull, read - from.read);
        } else from = null;
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    await waitForRows(emu, dir, 'ev', lines, 'all rows', { timeoutMs: 60_000 });
    on = false;
    await sampler;
    expect(
      logs.filter((l) => l.event === 'state_fault').map((l) => l.fault),
      'the full spill directory was reported as disk_full',
    ).toContain('disk_full');
    expect(logs.some((l) => l.event === 'state_fault_cleared')).toBe(true);
    // The reader stopped: spoolship_bytes_read_total counts a chunk when its
    // read is over, so what it counted since the fault began is at most the
    // one read under way then (a read round's chunk, READ_BUFFER_BYTES, on a
    // busy machine the spill fails while it reads), not the ~2 MB a reader
    // that did not wait read here.
    expect(readWhileFull).toBeLessThanOrEqual(READ_BUFFER_BYTES);
    expect(await gauge(agent, 'spoolship_parked', '{reason="disk_full"}')).toBe(0);
    await waitFor(async () => (await gauge(agent, 'spoolship_spilled_body_bytes')) === 0, 'every spilled body released');
    await stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), lines);
    expect(readdirSync(spill)).toEqual([]);
  });

  /**
   * Stop an agent while a spill waits for room (stop() throws what the agent
   * reported as fatal until then), start another on the same state_dir with
   * answers back, and see every line once.
   */
  async function stopWhileASpillWaits(faults: Parameters<Emulator['setFaults']>[0]): Promise<void> {
    const { dir, emu, config, lines } = await smallSpillDir(6000, 100_000);
    emu.setFaults(faults);
    const first = await startAgent(config, { bodiesInMemoryBytes: 0 });
    await waitFor(async () => (await gauge(first.agent, 'spoolship_parked', '{reason="disk_full"}')) === 1, 'a spill waiting for room');
    await first.stop();
    emu.setFaults([]);
    const second = await startAgent(config, { bodiesInMemoryBytes: 0 });
    await waitForRows(emu, dir, 'ev', lines, 'all rows after the restart', { timeoutMs: 60_000 });
    await second.stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), lines);
  }

  it('a stop while a spill waits for room ends in time; the next start sends what was left, every line once', async () => {
    // Bounded by shutdown_timeout_ms (3 s) and the test's own timeout.
    await stopWhileASpillWaits([]);
  });

  it('a stop that runs out of time while a spill waits ends without a fatal error; the next start sends every line once', async () => {
    // No answer at all: the spilled bodies keep their room, so the next spill
    // waits through the whole stop; shutdown_timeout_ms (3 s) cuts the hung
    // requests and destroys the parts, and the waiting spill ends with them,
    // inside the stop.
    await stopWhileASpillWaits([{ kind: 'hang' }]);
  });
});
