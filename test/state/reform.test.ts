// README "Delivery guarantee": after a crash, batches in flight are re-formed from the
// same file ranges, byte-identical, so the platform's dedup applies.
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { reformBatch } from '../../src/agent/reform.js';
import { Batcher, type ClosedBatch } from '../../src/batcher/batcher.js';
import { Progress } from '../../src/state/progress.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

describe('re-forming a batch from its recorded ranges', () => {
  it('gives exactly the bytes the batcher sent: CRLF, empty lines, two files, a final partial line', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-reform-'));
    dirs.push(dir);
    const a = Buffer.from('{"a":1}\r\n\n{"a":2}\n\r\n' + '{"a":3,"pad":"' + 'x'.repeat(40) + '"}\n{"a":4}\n');
    const b = Buffer.from('{"b":1}\n\n\n{"b":2}\r\n{"b":"tail without newline"}');
    const fa = path.join(dir, 'a.ndjson');
    const fb = path.join(dir, 'b.ndjson');
    await writeFile(fa, a);
    await writeFile(fb, b);
    const progress = new Progress();
    // Re-forming opens a file only if it is still the recorded one (device + inode).
    const meta = async (key: string, p: string) => {
      const st = await stat(p);
      return { key, dev: st.dev, ino: st.ino, gen: 0, fp: '', fpLen: 0, path: p, ds: 'ev' };
    };
    progress.addFile(await meta('a', fa), 0);
    progress.addFile(await meta('b', fb), 0);
    const closed: ClosedBatch[] = [];
    let id = 1;
    const batcher = new Batcher({
      progress,
      newBatchId: () => id++,
      now: () => 0,
      maxBytes: 60, // small: several batches, and a 57-byte line alone in one
      maxLineBytes: 1000,
      maxOpenBytes: 10_000,
      validateJson: false,
      capFor: () => 60,
      onClose: (batch) => closed.push({ ...batch, body: Buffer.from(batch.body) }),
      onDeadLetter: () => undefined,
    });
    batcher.append({ key: 'a', ds: 'ev', path: fa }, a, 0, a.length, 0);
    const lastNl = b.lastIndexOf(10) + 1;
    batcher.append({ key: 'b', ds: 'ev', path: fb }, b, 0, lastNl, 0);
    // The file is finished: its partial last line is sent whole (the tailer adds the newline).
    const tail = Buffer.concat([b.subarray(lastNl), Buffer.from('\n')]);
    batcher.append({ key: 'b', ds: 'ev', path: fb }, tail, 0, tail.length, lastNl);
    batcher.closeAll();
    expect(closed.length).toBeGreaterThan(2);
    const paths: Record<string, string> = { a: fa, b: fb };
    for (const batch of closed) {
      const ranges = progress.rangesOf(batch.id);
      const r = await reformBatch(ranges, (k) => paths[k], (k) => progress.files.get(k)?.meta);
      expect(r.missing).toEqual([]);
      expect(r.lines).toBe(batch.lines);
      expect(r.body.equals(batch.body)).toBe(true);
    }
    expect(closed.map((c) => c.body.toString()).join('')).toBe(
      '{"a":1}\n{"a":2}\n{"a":3,"pad":"' + 'x'.repeat(40) + '"}\n{"a":4}\n{"b":1}\n{"b":2}\n{"b":"tail without newline"}\n',
    );
  });
});
