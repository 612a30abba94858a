// compression.threads: as many compressions run at once as the setting says
// (it was a constant 2 whatever the host), and the agent says how many in
// its gauge and /status. Large batches are compressed in parts, so the
// threads need not hold a raw batch each: the raw bytes waiting for them are
// bounded by a part per thread and one batch.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCodec, type Codec } from '../../src/codec/index.js';
import { configFor, gauge, startAgent, startEmu, tempDir, waitForRows, writeLines } from './helpers.js';

/**
 * The real zstd codec, counting the compressions (of parts) running at once
 * and the batches between the start and the end of their compression. Each
 * part waits until `target` parts run and, if given, `batchTarget` batches
 * compress (or 3 s passed, so a lower limit fails on the count, not on a
 * timeout; 300 ms was too short for six 4 MB batches to be read and closed
 * on a busy 2-core machine: Node 24 once saw 5 at once).
 */
function countingCodec(target: number, batchTarget = Infinity, name: 'zstd' | 'gzip' = 'zstd'): { codec: Codec; most: () => number; mostBatches: () => number } {
  const real = createCodec(name, name === 'zstd' ? 3 : 1);
  let running = 0;
  let most = 0;
  let batches = 0;
  let mostBatches = 0;
  let held: Array<() => void> = [];
  const reached = () => running >= target && (batchTarget === Infinity || batches >= batchTarget);
  const releaseAll = () => {
    for (const go of held.splice(0)) go();
  };
  const counted = async (compress: () => Promise<Buffer>): Promise<Buffer> => {
    running++;
    most = Math.max(most, running);
    try {
      if (reached()) releaseAll();
      else {
        await new Promise<void>((go) => {
          const t = setTimeout(go, 3000);
          held.push(() => {
            clearTimeout(t);
            go();
          });
        });
      }
      return await compress();
    } finally {
      running--;
    }
  };
  const codec: Codec = {
    name: real.name,
    contentEncoding: real.contentEncoding,
    partBytes: real.partBytes,
    compress: real.compress,
    async compressFrames(data, turn = (c) => c()) {
      batches++;
      mostBatches = Math.max(mostBatches, batches);
      if (reached()) releaseAll();
      try {
        return await real.compressFrames(data, (compress) => turn(() => counted(compress)));
      } finally {
        batches--;
      }
    },
  };
  return { codec, most: () => most, mostBatches: () => mostBatches };
}

describe('compression.threads', () => {
  for (const threads of [1, 3]) {
    it(`${threads}: at most ${threads} batches compress at once, and that many do; the gauge and /status say ${threads}`, async () => {
      const dir = await tempDir();
      const emu = await startEmu(dir);
      const lines = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ i, pad: 'x'.repeat(60) }));
      await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
      const { codec, most } = countingCodec(threads);
      const config = configFor(dir, emu, { batch: { max_bytes: 4000, linger_ms: 20 }, compression: { threads }, admin: { listen: '127.0.0.1:0' } });
      const { agent } = await startAgent(config, { codec });
      await waitForRows(emu, dir, 'ev', lines, 'every line');
      expect(most()).toBe(threads);
      expect(await gauge(agent, 'spoolship_compression_threads')).toBe(threads);
      const status = (await (await fetch(`${agent.adminUrl}/status`)).json()) as { agent: { compression: { threads: number; pool: number } } };
      expect(status.agent.compression.threads).toBe(threads);
      expect(status.agent.compression.pool).toBeGreaterThanOrEqual(1);
    });
  }

  /** Seven full batches of 4 MB: lines of exactly 400 bytes, so every batch closes full, none by linger (a linger may close a partial one while the reader waits: it is not read past the bound). */
  async function sevenFullBatches(counting: ReturnType<typeof countingCodec>): Promise<void> {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const lines = Array.from({ length: 70_000 }, (_, i) => {
      const head = JSON.stringify({ i, pad: '' }).length;
      return JSON.stringify({ i, pad: `${i * 7919}`.padEnd(399 - head, 'y') });
    });
    expect(new Set(lines.map((l) => l.length))).toEqual(new Set([399]));
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    const config = configFor(dir, emu, { batch: { max_bytes: 4_000_000, linger_ms: 60_000 }, compression: { codec: counting.codec.name, threads: 6 } });
    await startAgent(config, { codec: counting.codec });
    await waitForRows(emu, dir, 'ev', lines, 'every line');
  }

  it('zstd, 6 threads: parts of the batches keep all 6 busy, and at most 3 batches of 4 MB wait for them (a part per thread and one batch), not 6', async () => {
    // Parts wait for a 4th batch (or 300 ms): the reader gets every chance to read one.
    const counting = countingCodec(6, 4);
    await sevenFullBatches(counting);
    expect(counting.most()).toBe(6);
    // 6 parts of 1 MiB and one batch of 4,000,000 bytes: two batches are under that, the third reaches it.
    expect(counting.mostBatches()).toBe(3);
  });

  it('gzip, 6 threads (one member per batch): 6 batches compress at once, one per thread', async () => {
    const counting = countingCodec(6, 6, 'gzip');
    await sevenFullBatches(counting);
    expect(counting.most()).toBe(6);
    expect(counting.mostBatches()).toBe(6);
  });
});
