// README "Delivery guarantee": a range gone from its file (copytruncate) is
// re-formed from a copy beside it with the file's first bytes and the
// range's CRC. A log directory holds many other files: the copy must be
// found whatever its place in the listing (a cap on the entries read,
// applied before the candidates were picked, hid a copy that sorted after
// 10,000 other names).
import { copyFile, mkdir, mkdtemp, rm, stat, truncate, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { reformBatch } from '../../src/recovery/reform.js';
import { fingerprintOf } from '../../src/spool/identity.js';
import { crc32 } from '../../src/util/crc32.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

describe('re-forming a range from a copy of its file', () => {
  it('finds the copy in a directory of 12,000 other files that sort before it', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-copies-'));
    dirs.push(dir);
    for (let i = 0; i < 12_000; i++) await writeFile(path.join(dir, `a-${String(i).padStart(5, '0')}.txt`), '');
    const file = path.join(dir, 'b.ndjson');
    const body = Buffer.from(Array.from({ length: 50 }, (_, i) => `{"n":${i},"pad":"${'x'.repeat(60)}"}\n`).join(''));
    await writeFile(file, body);
    const st = await stat(file);
    const meta = { key: 'k', dev: st.dev, ino: st.ino, gen: 0, ...fingerprintOf(body.subarray(0, 256)), path: file, ds: 'ev' };
    // Lines 2 to 11, whole.
    const after = (n: number) => {
      let at = 0;
      for (let i = 0; i < n; i++) at = body.indexOf(10, at) + 1;
      return at;
    };
    const [start, end] = [after(2), after(12)];
    const range = { file: 'k', start, end, crc: crc32(body.subarray(start, end)) };
    // copytruncate: the copy sorts after every a-* name.
    await copyFile(file, path.join(dir, 'b.ndjson.1'));
    await truncate(file, 0);
    const r = await reformBatch([range], () => file, () => meta);
    expect(r.missing).toEqual([]);
    expect(r.fromCopies).toEqual([[file, path.join(dir, 'b.ndjson.1')]]);
    expect(r.body.equals(body.subarray(start, end))).toBe(true);
  }, 60_000);

  it("finds the copy in logrotate's olddir (a directory beside the file's), as relocation finds a renamed file there", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-copies-'));
    dirs.push(dir);
    await mkdir(path.join(dir, 'old'));
    const file = path.join(dir, 'b.ndjson');
    const body = Buffer.from(Array.from({ length: 20 }, (_, i) => `{"n":${i},"pad":"${'y'.repeat(60)}"}\n`).join(''));
    await writeFile(file, body);
    const st = await stat(file);
    const meta = { key: 'k', dev: st.dev, ino: st.ino, gen: 0, ...fingerprintOf(body.subarray(0, 256)), path: file, ds: 'ev' };
    const range = { file: 'k', start: 0, end: body.length, crc: crc32(body) };
    // copytruncate with `olddir old`.
    await copyFile(file, path.join(dir, 'old', 'b.ndjson.1'));
    await truncate(file, 0);
    const r = await reformBatch([range], () => file, () => meta);
    expect(r.missing).toEqual([]);
    expect(r.fromCopies).toEqual([[file, path.join(dir, 'old', 'b.ndjson.1')]]);
    expect(r.body.equals(body)).toBe(true);
  });
});
