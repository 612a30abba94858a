// The hot read in its own thread (spool/scan-reader.ts): the bytes it puts
// in a shared buffer and what it finds in them (the last newline, the run
// of ordinary lines, their CRC) are what this thread's read and the line
// rules give; a read is not held up while the thread starts (it is done
// here meanwhile); a failing read is the same error; a thread that dies leaves
// no read unanswered and reading goes on here; and a tailer does not close
// a descriptor that a read is still using.
import { closeSync, fstatSync, openSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { plainRun } from '../../src/batcher/lines.js';
import { sharedBuffer } from '../../src/batcher/buffers.js';
import { readHere, ScanReader, type ChunkReader, type ChunkScan, type ScanRequest } from '../../src/spool/scan-reader.js';
import { FileTailer } from '../../src/spool/tailer.js';
import { Batcher } from '../../src/batcher/batcher.js';
import { crc32 } from '../../src/util/crc32.js';

const dirs: string[] = [];
const readers: ScanReader[] = [];
afterEach(async () => {
  for (const r of readers.splice(0)) await r.close();
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function tempFile(data: Buffer): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-scan-reader-'));
  dirs.push(dir);
  const file = path.join(dir, 'app.ndjson');
  await writeFile(file, data);
  return file;
}

function reader(onFailed?: (err: Error) => void, startThread?: () => Worker, onReady?: () => void): ScanReader {
  const r = new ScanReader(onFailed, onReady, startThread);
  readers.push(r);
  return r;
}

/** Start r's thread (a read does) and wait until it takes reads: until then reads are done here. */
async function threadReady(r: ScanReader): Promise<void> {
  await r.read({ fd: 1_000_000, buf: sharedBuffer(1), at: 0, length: 1, position: 0, scanFrom: 0, maxLen: 1 }).catch(() => undefined);
  await r.started;
}

/** What the look must find in buf[from, to), written plainly with the line rules. */
function expectedLook(buf: Buffer, from: number, to: number, maxLen: number) {
  const last = buf.subarray(from, to).lastIndexOf(10);
  if (last === -1) return { lastNewline: -1, runEnd: from, lines: 0, crc: 0 };
  const run = plainRun(buf, from, from + last + 1, maxLen);
  return { lastNewline: from + last, runEnd: run.end, lines: run.lines, crc: crc32(buf.subarray(from, run.end)) };
}

/** Lines of a random mix: ordinary ones, empty ones, CRLF ones, long ones, and maybe a partial last line. */
const lineMix = fc
  .tuple(
    fc.array(fc.oneof(fc.constant(''), fc.constant('\r'), fc.string({ minLength: 1, maxLength: 40 }).map((s) => s.replace(/\n/g, ' ')), fc.constant('x'.repeat(120))), { maxLength: 60 }),
    fc.string({ maxLength: 10 }).map((s) => s.replace(/\n/g, ' ')),
  )
  .map(([lines, tail]) => Buffer.from(lines.map((l) => `${l}\n`).join('') + tail));

describe('ScanReader', () => {
  it('reads what this thread reads and finds what the line rules find, in its thread and here alike', async () => {
    const r = reader();
    await threadReady(r);
    await fc.assert(
      fc.asyncProperty(lineMix, fc.nat(30), fc.integer({ min: -1, max: 100 }), async (data, carried, maxLen) => {
        const file = await tempFile(data);
        const fd = openSync(file, 'r');
        try {
          // A carried partial line sits before the read bytes; the look starts with it.
          const carry = Buffer.from('c'.repeat(carried));
          const req = (buf: Buffer): ScanRequest => ({ fd, buf, at: 7 + carried, length: data.length + 5, position: 0, scanFrom: 7, maxLen });
          const shared = sharedBuffer(carried + data.length + 20);
          const plain = Buffer.alloc(shared.length);
          carry.copy(shared, 7);
          carry.copy(plain, 7);
          const [there, here] = await Promise.all([r.read(req(shared)), readHere(req(plain))]);
          expect(there.bytesRead).toBe(data.length);
          expect(shared.subarray(7, 7 + carried + data.length)).toEqual(Buffer.concat([carry, data]));
          expect(there).toEqual(here);
          expect(there).toEqual({ bytesRead: data.length, ...expectedLook(shared, 7, 7 + carried + data.length, maxLen) });
        } finally {
          closeSync(fd);
        }
      }),
      { numRuns: 60 },
    );
    expect(r.where).toBe('thread');
  });

  it('does not hold a read up while its thread is starting: the read is done here meanwhile', async () => {
    const data = Buffer.from('{"a":1}\n{"a":2}\n{"a":');
    const file = await tempFile(data);
    const fd = openSync(file, 'r');
    // A thread that never says it is ready (Node's start-up in a real one takes 30-70 ms).
    let thread: Worker | null = null;
    let readyTold = 0;
    const r = reader(undefined, () => (thread = new Worker('setInterval(() => {}, 1e6);', { eval: true })), () => readyTold++);
    try {
      const req: ScanRequest = { fd, buf: sharedBuffer(100), at: 0, length: 100, position: 0, scanFrom: 0, maxLen: 100 };
      expect(await r.read(req)).toEqual({ bytesRead: data.length, lastNewline: 15, runEnd: 16, lines: 2, crc: crc32(data.subarray(0, 16)) });
      expect(thread).not.toBeNull();
      expect(r.where).toBe('thread');
      expect(readyTold).toBe(0);
    } finally {
      closeSync(fd);
    }
  });

  it('rejects a failing read with its code, as a read here does', async () => {
    // No such descriptor (a closed one's number may be taken again meanwhile).
    const fd = 1_000_000;
    const req: ScanRequest = { fd, buf: sharedBuffer(64), at: 0, length: 64, position: 0, scanFrom: 0, maxLen: 100 };
    const r = reader();
    await threadReady(r);
    await expect(r.read(req)).rejects.toMatchObject({ code: 'EBADF', syscall: 'read' });
    await expect(readHere({ ...req, buf: Buffer.alloc(64) })).rejects.toMatchObject({ code: 'EBADF' });
  });

  it('answers a read the thread left when it died, and reads here from then on; the failure is told once', async () => {
    const data = Buffer.from('{"a":1}\n{"a":2}\n{"a":3}\r\n{"a":4}\n');
    const file = await tempFile(data);
    const fd = openSync(file, 'r');
    const failures: Error[] = [];
    let readyTold = 0;
    const r = reader((err) => failures.push(err), undefined, () => readyTold++);
    const req = (): ScanRequest => ({ fd, buf: sharedBuffer(100), at: 0, length: 100, position: 0, scanFrom: 0, maxLen: 100 });
    try {
      await threadReady(r);
      expect((await r.read(req())).lines).toBe(2);
      const pending = r.read(req());
      await (r as unknown as { worker: Worker }).worker.terminate();
      const after = await pending;
      expect(after).toEqual({ bytesRead: data.length, lastNewline: data.length - 1, runEnd: 16, lines: 2, crc: crc32(data.subarray(0, 16)) });
      expect(r.where).toBe('main');
      expect(await r.read(req())).toEqual(after);
      expect(failures.map((e) => e.message)).toEqual(['the reader thread exited (code 1)']);
      expect(readyTold).toBe(1);
    } finally {
      closeSync(fd);
    }
  });
});

describe('FileTailer with a reader', () => {
  it('closes its descriptor only once a read through it is answered', async () => {
    const data = Buffer.from('{"a":1}\n{"a":2}\n');
    const file = await tempFile(data);
    const probe = openSync(file, 'r');
    const st = fstatSync(probe);
    closeSync(probe);
    const t = new FileTailer('k', 'ev', file, 0, st.dev, st.ino, 0, 0, 1000);
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let asked!: () => void;
    const readAsked = new Promise<void>((resolve) => (asked = resolve));
    const gated: ChunkReader = {
      where: 'main',
      async read(req): Promise<ChunkScan> {
        asked();
        await gate;
        const scan = await readHere(req);
        order.push('read');
        return scan;
      },
    };
    const bodies: string[] = [];
    const batcher = new Batcher({
      progress: { claim: () => ({ key: 'k', start: 0, end: 0, owner: 1, done: false, recorded: false }) },
      batchIds: { newBatchId: () => 1 },
      now: () => 0,
      maxBytes: 1000,
      maxLineBytes: 1000,
      maxOpenBytes: 10_000,
      validateJson: false,
      sizeCaps: { capFor: () => 1000 },
      onClose: (b) => bodies.push(b.body.toString()),
      onDeadLetter: () => undefined,
    });
    const reading = t.readOnce(Buffer.alloc(1024), batcher, gated);
    await readAsked;
    const fh = t.fh!;
    const close = fh.close.bind(fh);
    fh.close = () => {
      order.push('close');
      return close();
    };
    // Asked to close while the read waits: the close comes after it.
    const closing = t.closeFd();
    release();
    expect(await reading).toBe(data.length);
    await closing;
    expect(order).toEqual(['read', 'close']);
    batcher.closeAll();
    expect(bodies).toEqual([data.toString()]);
  });
});
