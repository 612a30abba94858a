// A 25 s outage (every request answered 503) while 300 MB are written to the
// spool: the backlog goes to the disk queue (not to the platform, not lost),
// and when the outage ends every line arrives, once. The agent's memory in
// this scenario is a benchmark, not a test (`npm run bench -- --cases
// outage`: peak RSS, target 200 MB).
import { randomBytes } from 'node:crypto';
import { mkdirSync, openSync, closeSync, writeSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkDelivery, errorsIn, metric, sleep, spawnAgent, startEmu, tempDir, waitFor, writeConfig } from './helpers.js';

const TOTAL_BYTES = 300 * 1000 * 1000;
const LINE = 1000;
const OUTAGE_MS = 25_000;

/**
 * Cheap 300 MB: lines of LINE bytes whose pads are slices of an 8 MiB random
 * base64 pool (larger than zstd's window at level 3, so the data compresses
 * like real logs, not like a run of one repeated line), with a unique id
 * written into a copied template block.
 */
class BigWriter {
  private readonly pool = randomBytes(6 * 1024 * 1024).toString('base64');
  private poolPos = 0;
  written = 0;

  blockOf(first: number, count: number): Buffer {
    const head = (n: number) => `{"id":"b${String(n).padStart(9, '0')}","pad":"`;
    const padLen = LINE - head(0).length - 3;
    const buf = Buffer.allocUnsafe(count * LINE);
    for (let i = 0; i < count; i++) {
      const off = i * LINE;
      buf.write(head(first + i), off, 'latin1');
      if (this.poolPos + padLen > this.pool.length) this.poolPos = 0;
      buf.write(this.pool.slice(this.poolPos, this.poolPos + padLen), off + head(0).length, 'latin1');
      this.poolPos += padLen;
      buf.write('"}\n', off + LINE - 3, 'latin1');
    }
    return buf;
  }
}

describe('long outage with a large backlog (process)', () => {
  it('25 s of 503 while 300 MB are written: over 100 MB wait in the disk queue, nothing is stored meanwhile, everything arrives once afterwards', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir, { faults: [{ kind: 'status', status: 503 }] });
    // Defaults for batch/limits/queue; quick attempts a few ms apart so batches move to the disk queue.
    const cfg = await writeConfig(dir, t, { retry: { initial_ms: 20, max_ms: 500 }, batch: { linger_ms: 200 } });
    const p = spawnAgent(cfg.configFile);
    const admin = (await p.started)!;
    const outageStart = Date.now();
    const w = new BigWriter();
    const file = path.join(cfg.spoolDir, 'ev', 'big.ndjson');
    mkdirSync(path.dirname(file), { recursive: true });
    const fd = openSync(file, 'a');
    const linesTotal = TOTAL_BYTES / LINE;
    const perBlock = 4000; // 4 MB per write
    try {
      for (let n = 0; n < linesTotal; n += perBlock) {
        writeSync(fd, w.blockOf(n, Math.min(perBlock, linesTotal - n)));
        // Spread the writes over most of the outage, like a busy application would.
        await sleep(Math.max(0, Math.floor(((n + perBlock) / linesTotal) * (OUTAGE_MS - 8000)) - (Date.now() - outageStart)));
      }
    } finally {
      closeSync(fd);
    }
    const writtenMs = Date.now() - outageStart;
    // Batches pile up on disk, not in memory.
    await waitFor(async () => (await metric(admin, 'spoolship_queue_bytes')) > 100 * 1000 * 1000, 'over 100 MB in the disk queue', OUTAGE_MS);
    expect(t.emu.stats().rows.ev ?? 0).toBe(0);
    await sleep(Math.max(0, OUTAGE_MS - (Date.now() - outageStart)));
    const queueAtEnd = await metric(admin, 'spoolship_queue_bytes');
    t.emu.setFaults([]);
    const recoverStart = Date.now();
    await waitFor(() => (t.emu.stats().rows.ev ?? 0) >= linesTotal, `all ${linesTotal} lines after the outage`, 60_000, 200);
    const recoverMs = Date.now() - recoverStart;
    await waitFor(async () => (await metric(admin, 'spoolship_queue_batches')) === 0, 'the queue drained');
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
    const result = await checkDelivery(t, 'ev', 'b', linesTotal, LINE);
    console.log(
      `[outage] ${JSON.stringify({ writtenMs, queueBytesAtEnd: queueAtEnd, recoverMs, requests: t.emu.stats().requests_by_status, ...result })}`,
    );
    expect(errorsIn(p)).toEqual([]);
    expect({ missing: result.missing, duplicates: result.duplicates, unexpected: result.unexpected }).toEqual({ missing: 0, duplicates: 0, unexpected: 0 });
  }, 150_000);
});
