// compression.threads: as many batches compress at once as the setting says
// (it was a constant 2 whatever the host), and the agent says how many in
// its gauge and /status. The codec counts the compressions under way and
// holds each until as many as the setting allows have started (or 300 ms
// passed, so a lower limit fails on the count, not on a timeout).
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCodec, type Codec } from '../../src/codec/index.js';
import { configFor, gauge, startAgent, startEmu, tempDir, waitForRows, writeLines } from './helpers.js';

function countingCodec(target: number): { codec: Codec; most: () => number } {
  const real = createCodec('zstd', 3);
  let running = 0;
  let most = 0;
  let held: Array<() => void> = [];
  const releaseAll = () => {
    for (const go of held.splice(0)) go();
  };
  const codec: Codec = {
    name: real.name,
    contentEncoding: real.contentEncoding,
    async compress(data) {
      running++;
      most = Math.max(most, running);
      try {
        if (running >= target) releaseAll();
        else {
          await new Promise<void>((go) => {
            const t = setTimeout(go, 300);
            held.push(() => {
              clearTimeout(t);
              go();
            });
          });
        }
        return await real.compress(data);
      } finally {
        running--;
      }
    },
  };
  return { codec, most: () => most };
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
});
