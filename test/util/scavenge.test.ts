// The codec's outputs are given back soon after the pipeline drops them: the
// pipeline reports every dropped body, and a young-generation collection runs
// (in a later turn) once SCAVENGE_AFTER_BYTES of them are dropped. The steps
// spilled bodies are sent from may be promoted before they are dropped: while
// they are, a collection is a full one once external memory has grown by
// MAJOR_AFTER_GROWTH_BYTES since the last full one.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { MAJOR_AFTER_GROWTH_BYTES, SCAVENGE_AFTER_BYTES, Scavenger, collections, type DroppedHow } from '../../src/util/scavenge.js';
import { configFor, jsonLines, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines } from '../pipeline/helpers.js';

function manual() {
  const queued: Array<() => void> = [];
  const done: Array<'minor' | 'major'> = [];
  // External memory as V8 would report it: a full collection frees `garbage`.
  const mem = { external: 50e6, garbage: 0 };
  const s = new Scavenger(
    (type) => {
      done.push(type);
      if (type === 'major') {
        mem.external -= mem.garbage;
        mem.garbage = 0;
      }
    },
    (f) => queued.push(f),
    () => mem.external,
  );
  /** Promoted buffers: external memory grows until a full collection. */
  const promote = (bytes: number) => {
    mem.external += bytes;
    mem.garbage += bytes;
  };
  return { s, queued, collections: () => done.length, done, mem, promote };
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

  it('a full collection while sent steps are dropped and external memory grew by MAJOR_AFTER_GROWTH_BYTES; never for copied outputs', () => {
    const { s, queued, done, mem, promote } = manual();
    const drop = (how: DroppedHow) => {
      s.dropped(SCAVENGE_AFTER_BYTES, how);
      queued.shift()!();
    };
    drop('sent'); // first measurement: the base
    // Copied outputs only: young collections, however much external memory grows.
    for (let n = 0; n < 8; n++) {
      promote(MAJOR_AFTER_GROWTH_BYTES / 2);
      drop('copied');
    }
    expect(done.every((t) => t === 'minor')).toBe(true);
    mem.external -= mem.garbage; // (V8's own full collection)
    mem.garbage = 0;
    done.length = 0;
    // Sent steps without growth: young collections.
    for (let n = 0; n < 8; n++) drop('sent');
    expect(done.every((t) => t === 'minor')).toBe(true);
    done.length = 0;
    // Sent steps while promoted steps pile up: a full collection once they reach the bound, then counting starts again.
    const per = 4;
    for (let n = 0; n < 2 * per; n++) {
      promote(MAJOR_AFTER_GROWTH_BYTES / per);
      drop('sent');
    }
    expect(done).toEqual([...Array(per - 1).fill('minor'), 'major', ...Array(per - 1).fill('minor'), 'major']);
  });

  it('does nothing where Node gives no collection', () => {
    const queued: Array<() => void> = [];
    const s = new Scavenger(undefined, (f) => queued.push(f));
    s.dropped(10 * SCAVENGE_AFTER_BYTES);
    expect(queued).toHaveLength(0);
  });

  it('Node 20 and later give both collections at run time (seen by a gc observer), and to no context made afterwards', async () => {
    const collect = collections();
    expect(collect).toBeTypeOf('function');
    const kinds: number[] = [];
    const seen = new PerformanceObserver((list) => kinds.push(...list.getEntries().map((e) => ((e as unknown as { detail: { kind: number } }).detail.kind))));
    seen.observe({ entryTypes: ['gc'] });
    try {
      collect!('minor');
      await waitFor(() => kinds.length > 0, 'the young collection observed');
      expect(kinds).toContain(constants.NODE_PERFORMANCE_GC_MINOR);
      kinds.length = 0;
      collect!('major');
      await waitFor(() => kinds.length > 0, 'the full collection observed');
      // (Node 20's V8 runs a young collection for gc({ type: 'major' }).)
      expect(kinds).toContain(constants.NODE_PERFORMANCE_GC_MAJOR);
    } finally {
      seen.disconnect();
    }
    expect(vm.runInNewContext('typeof gc')).toBe('undefined');
  });

  it("the agent reports every compressed body it drops: their bytes are the requests' bodies on the wire", async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const config = configFor(dir, emu, { batch: { max_bytes: 20_000, linger_ms: 50 } });
    await mkdir(path.join(config.spool.dir, 'ev'), { recursive: true });
    const lines = jsonLines('a', 0, 2000, 40);
    await writeLines(path.join(config.spool.dir, 'ev', 'a.ndjson'), lines);
    const dropped: number[] = [];
    const hows = new Set<DroppedHow>();
    await startAgent(config, {
      bodyDrops: {
        dropped: (b, how) => {
          dropped.push(b);
          hows.add(how);
        },
      },
    });
    const accepted = () => emu.requests().filter((r) => r.outcome === 202 || r.outcome === 200);
    // The emulator records a request just after storing its rows.
    await waitForRows(emu, dir, 'ev', lines, 'all 2,000 rows at the emulator');
    await waitFor(() => accepted().length === dropped.length, 'every request recorded');
    const bodies = accepted();
    expect(bodies.length).toBeGreaterThan(5);
    expect(bodies.every((r) => r.contentEncoding === 'zstd')).toBe(true);
    expect(dropped.sort((a, b) => a - b)).toEqual(bodies.map((r) => r.bodyBytes).sort((a, b) => a - b));
    expect([...hows]).toEqual(['copied']);
  });

  it('with every body spilled, the steps each attempt was sent from are reported as sent: as many bytes as the requests carried', async () => {
    const dir = await tempDir();
    // Every 3rd request answered 500 (nothing stored): those bodies are read and sent again.
    const emu = await startEmu(dir, { faults: [{ kind: 'status', status: 500, every: 3 }] });
    const config = configFor(dir, emu, { batch: { max_bytes: 20_000, linger_ms: 50 } });
    const lines = jsonLines('a', 0, 2000, 40);
    await writeLines(path.join(config.spool.dir, 'ev', 'a.ndjson'), lines);
    const by = { copied: 0, sent: 0 };
    await startAgent(config, { bodiesInMemoryBytes: 0, bodyDrops: { dropped: (b, how) => (by[how] += b) } });
    const sum = (rs: Array<{ bodyBytes: number }>) => rs.reduce((n, r) => n + r.bodyBytes, 0);
    await waitForRows(emu, dir, 'ev', lines, 'all 2,000 rows');
    // Every request recorded first: records short of the last one could match reports short of it.
    await emu.settled();
    await waitFor(() => by.sent === sum(emu.requests()), 'every request reported');
    const accepted = emu.requests().filter((r) => r.outcome === 202 || r.outcome === 200);
    expect(emu.requests().length).toBeGreaterThan(accepted.length);
    expect(by.copied).toBe(sum(accepted));
  });

  it('with codec none the body sent is the batch itself: nothing is dropped', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const config = configFor(dir, emu, { batch: { max_bytes: 20_000, linger_ms: 50 }, compression: { codec: 'none' } });
    const lines = jsonLines('a', 0, 2000, 40);
    await writeLines(path.join(config.spool.dir, 'ev', 'a.ndjson'), lines);
    const dropped: number[] = [];
    await startAgent(config, { bodyDrops: { dropped: (b) => dropped.push(b) } });
    await waitForRows(emu, dir, 'ev', lines, 'all 2,000 rows at the emulator');
    await emu.settled();
    expect(emu.requests().length).toBeGreaterThan(5);
    expect(dropped).toEqual([]);
  });
});
