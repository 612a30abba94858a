// The codec's outputs are given back soon after the pipeline drops them: the
// pipeline reports every dropped body, and a young-generation collection runs
// (in a later turn) once SCAVENGE_AFTER_BYTES of them are dropped.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { SCAVENGE_AFTER_BYTES, Scavenger, youngCollection } from '../../src/util/scavenge.js';
import { configFor, jsonLines, rows, startAgent, startEmu, tempDir, waitFor, writeLines } from '../pipeline/helpers.js';

function manual() {
  const queued: Array<() => void> = [];
  let collections = 0;
  const s = new Scavenger(
    () => collections++,
    (f) => queued.push(f),
  );
  return { s, queued, collections: () => collections };
}

describe('scavenger', () => {
  it('collects once SCAVENGE_AFTER_BYTES are dropped, in a later turn, once however many drops come before it runs', () => {
    const { s, queued, collections } = manual();
    s.dropped(SCAVENGE_AFTER_BYTES - 1);
    expect(queued, 'below the threshold: nothing').toHaveLength(0);
    s.dropped(1);
    expect(queued).toHaveLength(1);
    expect(collections(), 'not in the turn that drops: the output may still be referenced there').toBe(0);
    s.dropped(SCAVENGE_AFTER_BYTES);
    expect(queued, 'one collection pending covers the drops before it').toHaveLength(1);
    queued.shift()!();
    expect(collections()).toBe(1);
    s.dropped(SCAVENGE_AFTER_BYTES - 1);
    expect(queued, 'counting starts again after a collection').toHaveLength(0);
    s.dropped(1);
    queued.shift()!();
    expect(collections()).toBe(2);
  });

  it('does nothing where Node gives no collection', () => {
    const queued: Array<() => void> = [];
    const s = new Scavenger(undefined, (f) => queued.push(f));
    s.dropped(10 * SCAVENGE_AFTER_BYTES);
    expect(queued).toHaveLength(0);
  });

  it('Node 20 and later give the young-generation collection at run time, and to no context made afterwards', () => {
    const collect = youngCollection();
    expect(collect).toBeTypeOf('function');
    collect!();
    expect(vm.runInNewContext('typeof gc')).toBe('undefined');
  });

  it("the agent reports every compressed body it drops: their bytes are the requests' bodies on the wire", async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const config = configFor(dir, emu, { batch: { max_bytes: 20_000, linger_ms: 50 } });
    await mkdir(path.join(config.spool.dir, 'ev'), { recursive: true });
    await writeLines(path.join(config.spool.dir, 'ev', 'a.ndjson'), jsonLines('a', 0, 2000, 40));
    const dropped: number[] = [];
    await startAgent(config, { onBodyDropped: (b) => dropped.push(b) });
    const accepted = () => emu.requests().filter((r) => r.outcome === 202 || r.outcome === 200);
    // The emulator records a request once its answer is out, after storing its rows.
    await waitFor(() => rows(emu, dir, 'ev').length === 2000 && accepted().length === dropped.length, 'all 2,000 rows at the emulator, every request recorded');
    const bodies = accepted();
    expect(bodies.length).toBeGreaterThan(5);
    expect(bodies.every((r) => r.contentEncoding === 'zstd')).toBe(true);
    expect(dropped.sort((a, b) => a - b)).toEqual(bodies.map((r) => r.bodyBytes).sort((a, b) => a - b));
  });

  it('with codec none the body sent is the batch itself: nothing is dropped', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const config = configFor(dir, emu, { batch: { max_bytes: 20_000, linger_ms: 50 }, compression: { codec: 'none' } });
    await writeLines(path.join(config.spool.dir, 'ev', 'a.ndjson'), jsonLines('a', 0, 2000, 40));
    const dropped: number[] = [];
    await startAgent(config, { onBodyDropped: (b) => dropped.push(b) });
    await waitFor(() => rows(emu, dir, 'ev').length === 2000, 'all 2,000 rows at the emulator');
    expect(emu.requests().length).toBeGreaterThan(5);
    expect(dropped).toEqual([]);
  });
});
