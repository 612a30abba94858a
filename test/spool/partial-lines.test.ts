// A partial last line is not held in memory: its start offset is, and it is
// read again when its newline arrives (40 files each ending in a 9 MB
// unfinished line once took RSS to 430 MB).
import { appendFile, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Batcher } from '../../src/batcher/batcher.js';
import { CARRY_IN_MEMORY_BYTES, FileTailer } from '../../src/spool/tailer.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

/** Records what the tailer hands over: whole lines (with their file offset) and too-long lines. */
function recorder() {
  const lines: Array<{ text: string; offset: number }> = [];
  const tooLong: Array<{ head: number | null; total: number; start: number; end: number }> = [];
  const soFar: Array<{ head: number; read: number; start: number }> = [];
  const batcher = {
    append(_f: unknown, buf: Buffer, from: number, to: number, offset: number) {
      let pos = from;
      while (pos < to) {
        // A finished file's remainder comes without its newline.
        const nl = buf.indexOf(10, pos);
        const end = nl === -1 || nl >= to ? to : nl;
        lines.push({ text: buf.toString('utf8', pos, end), offset: offset + (pos - from) });
        pos = end + 1;
      }
    },
    tooLong(_f: unknown, head: Buffer | null, total: number, start: number, end: number) {
      tooLong.push({ head: head?.length ?? null, total, start, end });
    },
    tooLongSoFar(_f: unknown, head: Buffer, read: number, start: number) {
      soFar.push({ head: head.length, read, start });
    },
    // Reads go into the tailer's own buffer.
    borrow: () => null,
    giveBack: () => undefined,
  } as unknown as Batcher;
  return { lines, tooLong, soFar, batcher };
}

async function tailerFor(file: string, maxLineBytes = 10_000_000, start = 0, lettered?: number): Promise<FileTailer> {
  const st = await stat(file);
  const t = new FileTailer('k', 'ds', file, start, st.dev, st.ino, 0, 0, maxLineBytes, lettered);
  cleanups.push(() => t.closeFd());
  return t;
}

async function drain(t: FileTailer, b: Batcher): Promise<void> {
  const buf = Buffer.allocUnsafe(64 * 1024);
  while ((await t.readOnce(buf, b)) > 0);
}

async function tmp(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-partial-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('partial last lines', () => {
  it('a long unfinished line is kept as an offset, not bytes, and ships whole and byte-identical once its newline arrives', async () => {
    const dir = await tmp();
    const files = await Promise.all([0, 1, 2, 3].map(async (i) => {
      const f = path.join(dir, `f${i}.ndjson`);
      await writeFile(f, `{"a":${i}}\n{"long":"${'x'.repeat(300_000)}`);
      return f;
    }));
    const r = recorder();
    const tailers = await Promise.all(files.map((f) => tailerFor(f)));
    for (const t of tailers) await drain(t, r.batcher);
    expect(r.lines.map((l) => l.text)).toEqual(['{"a":0}', '{"a":1}', '{"a":2}', '{"a":3}']);
    for (const t of tailers) {
      expect(t.heldBytes).toBe(0);
      expect(t.carriedBytes).toBe(300_009);
      expect(t.pinned).toBe(true);
    }
    await appendFile(files[2]!, `${'y'.repeat(70_000)}"}\n{"after":1}\n`);
    await drain(tailers[2]!, r.batcher);
    const long = r.lines[4]!;
    expect(long.offset).toBe(8);
    expect(long.text).toBe(`{"long":"${'x'.repeat(300_000)}${'y'.repeat(70_000)}"}`);
    expect(r.lines[5]).toEqual({ text: '{"after":1}', offset: 8 + long.text.length + 1 });
    expect(tailers[2]!.carriedBytes).toBe(0);
    expect(tailers[2]!.pinned).toBe(false);
  });

  it('a short unfinished line stays in memory (at most CARRY_IN_MEMORY_BYTES) and ships when finished, even after the file is deleted', async () => {
    const dir = await tmp();
    const f = path.join(dir, 'a.ndjson');
    await writeFile(f, '{"a":1}\n{"partial":');
    const r = recorder();
    const t = await tailerFor(f);
    await drain(t, r.batcher);
    expect(t.heldBytes).toBe(11);
    expect(t.heldBytes).toBeLessThanOrEqual(CARRY_IN_MEMORY_BYTES);
    await t.closeFd(); // idle: the descriptor was given back
    await rm(f);
    t.detach(0, 'renamed');
    await t.flushRemainder(r.batcher);
    expect(r.lines.map((l) => l.text)).toEqual(['{"a":1}', '{"partial":']);
  });

  it('a long unfinished line of a deleted file is read back through the descriptor it keeps open, and ships as one line', async () => {
    const dir = await tmp();
    const f = path.join(dir, 'a.ndjson');
    const body = `{"b":"${'z'.repeat(100_000)}`;
    await writeFile(f, body);
    const r = recorder();
    const t = await tailerFor(f);
    await drain(t, r.batcher);
    expect(t.heldBytes).toBe(0);
    await rm(f);
    t.detach(0, 'renamed');
    await drain(t, r.batcher);
    await t.flushRemainder(r.batcher);
    expect(r.lines).toEqual([{ text: body, offset: 0 }]);
  });

  it('a line over max_line_bytes written whole goes to the dead letters with its first max_line_bytes bytes and its full length; nothing of it is held', async () => {
    const dir = await tmp();
    const f = path.join(dir, 'a.ndjson');
    await writeFile(f, `{"ok":1}\n${'q'.repeat(250_002)}\r\n{"ok":2}\n`);
    const r = recorder();
    const t = await tailerFor(f, 100_000);
    await drain(t, r.batcher);
    expect(t.heldBytes).toBe(0);
    expect(r.tooLong).toEqual([{ head: 100_000, total: 250_002, start: 9, end: 9 + 250_004 }]);
    expect(r.soFar).toEqual([]);
    expect(r.lines.map((l) => l.text)).toEqual(['{"ok":1}', '{"ok":2}']);
  });

  it('a line past max_line_bytes whose end is not written yet goes to the dead letters at once (the length read so far), and only its bytes are passed at its end', async () => {
    for (const [first, rest] of [[250_000, 70_000], [1_500, 700]]) {
      const dir = await tmp();
      const f = path.join(dir, 'a.ndjson');
      // A writer stopped inside the line: nothing tells when (or whether) its newline comes.
      await writeFile(f, `{"ok":1}\n${'q'.repeat(first)}`);
      const r = recorder();
      const max = first > 10_000 ? 100_000 : 1_000;
      const t = await tailerFor(f, max);
      await drain(t, r.batcher);
      expect(r.soFar).toEqual([{ head: max, read: first, start: 9 }]);
      expect(t.heldBytes).toBe(0);
      // More of it, still no end: not written again.
      await appendFile(f, 'q'.repeat(rest));
      await drain(t, r.batcher);
      expect(r.soFar).toHaveLength(1);
      expect(r.tooLong).toEqual([]);
      await appendFile(f, 'q\n{"ok":2}\n');
      await drain(t, r.batcher);
      // Its bytes, newline included, are passed without a second record (head null).
      expect(r.tooLong).toEqual([{ head: null, total: first + rest + 1, start: 9, end: 9 + first + rest + 2 }]);
      expect(r.soFar).toHaveLength(1);
      expect(r.lines.map((l) => l.text)).toEqual(['{"ok":1}', '{"ok":2}']);
    }
  });

  it('a restart inside a line whose record was written (the state says so) writes none again', async () => {
    const dir = await tmp();
    const f = path.join(dir, 'a.ndjson');
    await writeFile(f, `{"ok":1}\n${'q'.repeat(5_000)}`);
    const r = recorder();
    const t = await tailerFor(f, 1_000, 9, 9);
    await drain(t, r.batcher);
    expect(r.soFar).toEqual([]);
    await appendFile(f, '\n{"ok":2}\n');
    await drain(t, r.batcher);
    expect(r.tooLong).toEqual([{ head: null, total: 5_000, start: 9, end: 9 + 5_001 }]);
    expect(r.lines.map((l) => l.text)).toEqual(['{"ok":2}']);
    // The same restart once the line has ended: within one read, still only its bytes.
    const r2 = recorder();
    await drain(await tailerFor(f, 1_000, 9, 9), r2.batcher);
    expect(r2.tooLong).toEqual([{ head: null, total: 5_000, start: 9, end: 9 + 5_001 }]);
    expect(r2.lines.map((l) => l.text)).toEqual(['{"ok":2}']);
    // A line at another offset than the one recorded is handed over as any other (the batcher dead-letters it).
    const r3 = recorder();
    await drain(await tailerFor(f, 1_000, 9, 3), r3.batcher);
    expect(r3.tooLong).toEqual([]);
    expect(r3.lines.map((l) => l.text.length)).toEqual([5_000, 8]);
  });
});
