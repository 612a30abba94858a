// README "Delivery guarantee": after a crash, batches in flight are re-formed from the
// same file ranges, byte-identical, so the platform's dedup applies.
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lineRanges, reformBatch } from '../../src/recovery/reform.js';
import { Batcher, type ClosedBatch } from '../../src/batcher/batcher.js';
import { Progress } from '../../src/state/progress.js';
import { plainRun } from '../../src/batcher/lines.js';
import { lookAtChunk } from '../../src/spool/scan-reader.js';
import { crc32 } from '../../src/util/crc32.js';

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
      batchIds: { newBatchId: () => id++ },
      now: () => 0,
      maxBytes: 60, // small: several batches, and a 57-byte line alone in one
      maxLineBytes: 1000,
      maxOpenBytes: 10_000,
      validateJson: false,
      sizeCaps: { capFor: () => 60 },
      onClose: (batch) => closed.push({ ...batch, body: Buffer.from(batch.body) }),
      onDeadLetter: () => undefined,
    });
    batcher.append({ key: 'a', ds: 'ev', path: fa }, a, 0, a.length, 0);
    const lastNl = b.lastIndexOf(10) + 1;
    batcher.append({ key: 'b', ds: 'ev', path: fb }, b, 0, lastNl, 0);
    // The file is finished: its partial last line is handed over without a
    // newline, sent whole, and claimed to the file's end, not past it.
    batcher.append({ key: 'b', ds: 'ev', path: fb }, b, lastNl, b.length, lastNl);
    batcher.closeAll();
    expect(closed.length).toBeGreaterThan(2);
    expect(Math.max(...progress.files.get('b')!.entries.map((e) => e.end))).toBe(b.length);
    const paths: Record<string, string> = { a: fa, b: fb };
    const reformAll = async () => {
      for (const batch of closed) {
        const ranges = progress.rangesOf(batch.id);
        const r = await reformBatch(ranges, (k) => paths[k], (k) => progress.files.get(k)?.meta);
        expect(r.missing).toEqual([]);
        expect(r.lines).toBe(batch.lines);
        expect(r.body.equals(batch.body)).toBe(true);
      }
    };
    await reformAll();
    // Its writer went on after it was finished: the batches re-form the same.
    await writeFile(fb, Buffer.concat([b, Buffer.from('{"b":"later"}\n')]));
    await reformAll();
    expect(closed.map((c) => c.body.toString()).join('')).toBe(
      '{"a":1}\n{"a":2}\n{"a":3,"pad":"' + 'x'.repeat(40) + '"}\n{"a":4}\n{"b":1}\n{"b":2}\n{"b":"tail without newline"}\n',
    );
  });

  it('re-forms a range only from the bytes the batch took: after a copytruncate the other lines at its offsets are not sent', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-reform-changed-'));
    dirs.push(dir);
    const file = path.join(dir, 'app.ndjson');
    const lineOf = (p: string, n: number) => `{"id":"${p}-${String(n).padStart(4, '0')}"}\n`;
    const old = Buffer.from(Array.from({ length: 20 }, (_, n) => lineOf('old', n)).join(''));
    await writeFile(file, old);
    const st = await stat(file);
    const progress = new Progress();
    // No fingerprint: only the ranges' CRCs can tell (the fingerprint case is below).
    progress.addFile({ key: 'a', dev: st.dev, ino: st.ino, gen: 0, fp: '', fpLen: 0, path: file, ds: 'ev' }, 0);
    const closed: ClosedBatch[] = [];
    const batcher = new Batcher({
      progress,
      batchIds: { newBatchId: () => 1 },
      now: () => 0,
      maxBytes: 1 << 20,
      maxLineBytes: 1000,
      maxOpenBytes: 1 << 20,
      validateJson: false,
      sizeCaps: { capFor: () => 1 << 20 },
      onClose: (batch) => closed.push({ ...batch, body: Buffer.from(batch.body) }),
      onDeadLetter: () => undefined,
    });
    batcher.append({ key: 'a', ds: 'ev', path: file }, old, 0, old.length, 0);
    batcher.closeAll();
    const ranges = progress.rangesOf(1);
    expect(ranges.map((r) => typeof r.crc)).toEqual(['number']);
    // copytruncate, then the application writes on: same inode, other lines at the same offsets.
    await writeFile(file, Array.from({ length: 30 }, (_, n) => lineOf('new', n)).join(''));
    expect((await stat(file)).ino).toBe(st.ino);
    const r = await reformBatch(ranges, () => file, () => progress.files.get('a')?.meta);
    expect({ lines: r.lines, body: r.body.toString(), missing: r.missing.length, changed: r.changed }).toEqual({ lines: 0, body: '', missing: 1, changed: 1 });
    // The same bytes back in place: re-formed byte for byte.
    await writeFile(file, old);
    const again = await reformBatch(ranges, () => file, () => progress.files.get('a')?.meta);
    expect(again.body.equals(closed[0]!.body)).toBe(true);
  });

  it('re-forms nothing from a file whose first bytes are no longer its fingerprint (an inode reused by a new file)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-reform-fp-'));
    dirs.push(dir);
    const file = path.join(dir, 'app.ndjson');
    await writeFile(file, '{"n":1}\n{"n":2}\n');
    const st = await stat(file);
    const { fingerprintOf } = await import('../../src/spool/identity.js');
    const f = fingerprintOf(Buffer.from('{"n":1}\n{"n":2}\n'));
    const meta = { key: 'a', dev: st.dev, ino: st.ino, gen: 0, fp: f.fp, fpLen: f.fpLen, path: file, ds: 'ev' };
    // Recorded before ranges kept a CRC: only the fingerprint can tell.
    const ranges = [{ file: 'a', start: 0, end: 16 }];
    expect((await reformBatch(ranges, () => file, () => meta)).lines).toBe(2);
    await writeFile(file, '{"m":1}\n{"m":2}\n');
    const r = await reformBatch(ranges, () => file, () => meta);
    expect({ lines: r.lines, missing: r.missing.length }).toEqual({ lines: 0, missing: 1 });
  });

  it('property: for random line mixes (CRLF, empty lines, lone CRs, too-long lines, partial last lines, several files, random chunking, chunks looked at by the reader or not) every re-formed batch equals the batcher\'s', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-reform-prop-'));
    dirs.push(dir);
    const CASES = 150;
    for (let seed = 1; seed <= CASES; seed++) {
      const rnd = mulberry32(seed);
      const pick = (n: number) => Math.floor(rnd() * n);
      const maxBytes = 16 + pick(200);
      const files: Array<{ key: string; path: string; data: Buffer; complete: number }> = [];
      for (let f = 0; f < 1 + pick(3); f++) {
        let text = '';
        for (let l = 0; l < pick(30); l++) {
          const kind = pick(10);
          if (kind === 0) text += '\n';
          else if (kind === 1) text += '\r\n';
          else {
            // Content of 1..maxBytes+20 bytes (some too long for a batch: dead-lettered), now and then with a CR inside.
            const len = 1 + pick(maxBytes + 20);
            let content = '';
            for (let i = 0; i < len; i++) content += pick(40) === 0 ? '\r' : String.fromCharCode(97 + pick(26));
            text += content + (pick(3) === 0 ? '\r\n' : '\n');
          }
        }
        if (pick(2) === 0) text += 'partial-' + 'z'.repeat(pick(20)) + (pick(4) === 0 ? '\r' : '');
        const data = Buffer.from(text);
        const file = path.join(dir, `s${seed}-f${f}.ndjson`);
        await writeFile(file, data);
        files.push({ key: `k${f}`, path: file, data, complete: data.lastIndexOf(10) + 1 });
      }
      const progress = new Progress();
      for (const f of files) {
        const st = await stat(f.path);
        progress.addFile({ key: f.key, dev: st.dev, ino: st.ino, gen: 0, fp: '', fpLen: 0, path: f.path, ds: 'ev' }, 0);
      }
      const closed: ClosedBatch[] = [];
      let id = 1;
      const batcher = new Batcher({
        progress,
        batchIds: { newBatchId: () => id++ },
        now: () => 0,
        maxBytes,
        maxLineBytes: 1_000_000,
        maxOpenBytes: 1_000_000,
        validateJson: false,
        sizeCaps: { capFor: () => maxBytes },
        onClose: (batch) => closed.push({ ...batch, body: Buffer.from(batch.body) }),
        onDeadLetter: () => undefined,
      });
      // Chunks end on a newline (as the tailer hands them over), cut at random newlines, files interleaved at random.
      const pos = files.map(() => 0);
      for (;;) {
        const open = files.map((f, i) => i).filter((i) => pos[i]! < files[i]!.complete);
        if (open.length === 0) break;
        const i = open[pick(open.length)]!;
        const f = files[i]!;
        let to = f.data.indexOf(10, pos[i]!) + 1;
        while (to < f.complete && pick(2) === 0) to = f.data.indexOf(10, to) + 1;
        // The reader thread's look at the chunk (its run and CRC, joined to the range's), or none (the batcher searches).
        const look = pick(2) === 0 ? lookAtChunk(f.data, pos[i]!, to, batcher.plainLineLimit, crc32, plainRun) : undefined;
        batcher.append({ key: f.key, ds: 'ev', path: f.path }, f.data, pos[i]!, to, pos[i]!, look);
        pos[i] = to;
      }
      // Finished files: the partial last line, handed over without a newline, is sent whole.
      for (const f of files) {
        if (f.complete === f.data.length) continue;
        batcher.append({ key: f.key, ds: 'ev', path: f.path }, f.data, f.complete, f.data.length, f.complete);
      }
      batcher.closeAll();
      // Every byte claimed, none past a file's end (the committed offset is where a restart reads on).
      for (const f of files) {
        const ends = (progress.files.get(f.key)?.entries ?? []).map((e) => e.end);
        if (ends.length > 0) expect(Math.max(...ends), `seed ${seed}, ${f.key}`).toBe(f.data.length);
      }
      const paths = Object.fromEntries(files.map((f) => [f.key, f.path]));
      for (const batch of closed) {
        const r = await reformBatch(progress.rangesOf(batch.id), (k) => paths[k], (k) => progress.files.get(k)?.meta);
        expect(r.missing, `seed ${seed}, batch ${batch.id}`).toEqual([]);
        expect(r.lines, `seed ${seed}, batch ${batch.id}`).toBe(batch.lines);
        expect(r.body.toString('latin1'), `seed ${seed}, batch ${batch.id}`).toBe(batch.body.toString('latin1'));
      }
    }
  });

  it('lineRanges: the ranges of lines [first, first + count) re-form exactly those lines (CRLF, empty lines, across two files)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-reform-'));
    dirs.push(dir);
    const fa = path.join(dir, 'a.ndjson');
    const fb = path.join(dir, 'b.ndjson');
    await writeFile(fa, '{"a":1}\r\n\n{"a":2}\n\r\n{"a":3}\n');
    await writeFile(fb, '{"b":1}\n\n{"b":2}\r\n{"b":"tail"}');
    const paths: Record<string, string> = { a: fa, b: fb };
    const pathOf = (k: string) => paths[k];
    const size = async (p: string) => (await stat(p)).size;
    // A batch of lines a1 a2 a3 b1 b2 btail (indexes 0-5).
    const ranges = [
      { file: 'a', start: 0, end: await size(fa) },
      { file: 'b', start: 0, end: await size(fb) },
    ];
    const text = async (first: number, count: number) => {
      const [r] = await lineRanges(ranges, pathOf, [{ first, count }]);
      return r && (await reformBatch(r, pathOf)).body.toString();
    };
    expect(await text(0, 6)).toBe('{"a":1}\n{"a":2}\n{"a":3}\n{"b":1}\n{"b":2}\n{"b":"tail"}\n');
    expect(await text(1, 1)).toBe('{"a":2}\n');
    expect(await text(2, 3)).toBe('{"a":3}\n{"b":1}\n{"b":2}\n');
    expect(await text(5, 1)).toBe('{"b":"tail"}\n');
    // More lines than the ranges hold, or a file gone: null, never a wrong range.
    expect(await lineRanges(ranges, pathOf, [{ first: 4, count: 5 }])).toEqual([null]);
    expect(await lineRanges(ranges, (k) => (k === 'a' ? fa : undefined), [{ first: 2, count: 3 }])).toEqual([null]);
    // Several spans in one pass: each gets its own ranges; one the ranges cannot hold is null alone.
    const several = await lineRanges(ranges, pathOf, [{ first: 0, count: 2 }, { first: 2, count: 2 }, { first: 5, count: 2 }]);
    expect(await Promise.all(several.map(async (r) => r && (await reformBatch(r, pathOf)).body.toString()))).toEqual(['{"a":1}\n{"a":2}\n', '{"a":3}\n{"b":1}\n', null]);
  });
});

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
