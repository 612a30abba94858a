// Damaged retry-queue files, reported by name (SPEC section 3: any check
// failure but a torn tail is "an ERROR naming the file"). A damaged
// acknowledgement record in acks.log (its CRC fails, records follow) cannot
// say which batch it acknowledged: that batch comes back and is sent again;
// it was dropped without a word, and the start's rewrite of acks.log erased
// it. And `queue list` on a stopped agent read headers only: a record whose
// CRC fails was listed as if whole, and `queue dead-letter` on it ended in a
// stack trace.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { encodeAck } from '../../src/queue/format.js';
import { RetryQueue } from '../../src/queue/retry-queue.js';
import { configFor, gauge, startAgent, startEmu, tempDir } from '../pipeline/helpers.js';
import { runCli, writeConfig } from '../ops/helpers.js';

/** acks.log of two records, the first damaged (one byte of its payload changed); that record's length. */
function damagedAcks(queueDir: string): { file: string; firstLength: number } {
  mkdirSync(queueDir, { recursive: true, mode: 0o700 });
  const first = encodeAck({ seg: 1, off: 0 });
  first[first.length - 1] ^= 0x01;
  const file = path.join(queueDir, 'acks.log');
  writeFileSync(file, Buffer.concat([first, encodeAck({ seg: 1, off: 40 })]), { mode: 0o600 });
  return { file, firstLength: first.length };
}

describe('damaged retry-queue files', () => {
  it('is one ERROR queue_acks_corrupt naming the file and its byte range at the start, counted as a corrupt record', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const config = configFor(dir, emu);
    const { file, firstLength } = damagedAcks(path.join(config.state_dir, 'queue'));
    const logs: Array<Record<string, unknown>> = [];
    const { agent, stop } = await startAgent(config, { logs });
    try {
      expect(logs.filter((l) => l.event === 'queue_acks_corrupt')).toMatchObject([{ level: 50, file, ranges: [[0, firstLength]] }]);
      expect(await gauge(agent, 'spoolship_queue_corrupt_records_total')).toBe(1);
    } finally {
      await stop();
    }
  });

  it('is a warning naming the file and its bytes in queue list on a stopped agent (a batch listed may have been acknowledged)', async () => {
    const dir = await tempDir();
    const { file, firstLength } = damagedAcks(path.join(dir, 'state', 'queue'));
    const r = await runCli(['queue', 'list', '-c', await writeConfig(dir, null)], dir);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`spoolship queue: warning: ${file}: damaged acknowledgement records (bytes 0-${firstLength}): a batch listed may have been acknowledged already`);
  });

  it('queue list checks each record: one whose CRC fails is not listed, and a warning names its segment file and offset', async () => {
    const dir = await tempDir();
    const queueDir = path.join(dir, 'state', 'queue');
    mkdirSync(path.dirname(queueDir), { recursive: true, mode: 0o700 });
    const q = await RetryQueue.open(queueDir, 1 << 30, () => undefined);
    const header = (id: number) => ({ id, ds: 'ev', encoding: null, rawLen: 8, lines: 1, queuedAt: 1000 });
    await q.append(header(1), Buffer.from('{"a":1}\n'));
    await q.append(header(2), Buffer.from('{"a":2}\n'));
    await q.close();
    const seg = path.join(queueDir, 'seg-00000001.q');
    const data = readFileSync(seg);
    // The first record's last body byte: its header still reads, its CRC fails.
    const firstLen = 8 + data.readUInt32LE(0);
    data[firstLen - 2] ^= 0x01;
    writeFileSync(seg, data);
    const r = await runCli(['queue', 'list', '--json', '-c', await writeConfig(dir, null)], dir);
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { id: number }).id)).toEqual([2]);
    expect(r.stderr).toContain(`spoolship queue: warning: ${seg}: a damaged record at offset 0 (its batch cannot be read; not listed)`);
  });
});
