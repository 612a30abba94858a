// The hot read, in a thread of its own: a chunk of a file read into a
// shared buffer, and the one look at its bytes that every chunk needs (its
// last newline, the run of ordinary lines from its start by lines.ts
// plainRun, and that run's CRC-32) taken where the bytes land. The main
// thread then keeps only the books: on 16 cores its CPU per GB was the
// ceiling, and the newline search and the CRC were ~0.2 of its ~0.7-0.9 s
// per GB (bench/README.md, finding 39).
//
// Why a worker_threads Worker and not the libuv pool: the pool runs native
// jobs only. A worker can fill only memory it shares with the main thread:
// buffers over a SharedArrayBuffer (the read loop's and the batcher's are,
// batcher/buffers.ts). Any other buffer, and every read once the thread has
// failed, is read and looked at here with the same functions, so the
// result is the same whichever thread did it; a read the thread had not
// answered when it failed is read again here (a read at an offset into the
// same place: reading it twice changes nothing).
//
// Only with READER_THREAD_MIN_THREADS compression threads or more: on 16
// cores the main thread was the ceiling, while with 2 (a sidecar, a small
// VM) compression is, the thread would compete with it for the same two
// cores, and it costs 10-19 MB of RSS (its own V8 heap and Node's start-up
// in it: 10.7 MB on Node 20, 19 on Node 24) against that case's 150 MB.
//
// The thread takes reads once it says it is ready: Node's start-up in it
// takes 30-70 ms, and the first reads are done here meanwhile (the same
// functions, the same result), so that a backlog's first batch does not
// wait for it.
//
// The descriptor is a FileHandle's fd: its owner keeps the handle open until
// the read is answered (tailer.ts closeFd waits for it).
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { plainRun, type ChunkLook } from '../batcher/lines.js';
import { crc32 } from '../util/crc32.js';

export interface ChunkScan extends ChunkLook {
  bytesRead: number;
  /** The bytes before `position` were not `before` any more: nothing was read (the file was rewritten under the reader). */
  changed?: boolean;
}

/** Read file[position, position + length) into buf at `at`, then look at buf[scanFrom, at + bytes read). */
export interface ScanRequest {
  fd: number;
  buf: Buffer;
  at: number;
  length: number;
  position: number;
  scanFrom: number;
  /** The longest content an ordinary line may have (Batcher.plainLineLimit). */
  maxLen: number;
  /**
   * The last bytes read before `position`, checked before the read: a file
   * truncated and written past our offset between two reads (its size never
   * seen below it) no longer has them, and reading on would join an old
   * partial line to new bytes.
   */
  before?: Uint8Array;
}

/** What a read answers when the bytes before its position changed. */
function changedScan(req: Pick<ScanRequest, 'scanFrom'>): ChunkScan {
  return { bytesRead: 0, changed: true, lastNewline: -1, runEnd: req.scanFrom, lines: 0, crc: 0 };
}

/**
 * The look at buf[from, to). Self-contained (its helpers are parameters, no
 * names from outside): the reader thread runs this very function from its
 * source.
 */
export function lookAtChunk(
  buf: Buffer,
  from: number,
  to: number,
  maxLen: number,
  crcOf: (data: Uint8Array) => number,
  run: typeof plainRun,
): ChunkLook {
  const last = to > from ? buf.lastIndexOf(0x0a, to - 1) : -1;
  if (last < from) return { lastNewline: -1, runEnd: from, lines: 0, crc: 0 };
  const r = run(buf, from, last + 1, maxLen);
  return { lastNewline: last, runEnd: r.end, lines: r.lines, crc: r.end > from ? crcOf(buf.subarray(from, r.end)) : 0 };
}

/** Compression threads from which the reads get a thread of their own (above). */
export const READER_THREAD_MIN_THREADS = 4;

/** The read and the look on this thread. */
export async function readHere(req: ScanRequest): Promise<ChunkScan> {
  const read = (buf: Uint8Array, at: number, length: number, position: number) =>
    new Promise<number>((resolve, reject) => fs.read(req.fd, buf, at, length, position, (err, n) => (err ? reject(err) : resolve(n))));
  const k = req.before?.length ?? 0;
  let bytesRead: number;
  if (k > 0 && req.at - req.scanFrom >= k) {
    // The held partial line ends with those bytes: read them again in its
    // place, with the chunk, in one read (on this thread every read counts).
    const n = await read(req.buf, req.at - k, req.length + k, req.position - k);
    if (n < k || !req.buf.subarray(req.at - k, req.at).equals(req.before!)) return changedScan(req);
    bytesRead = n - k;
  } else {
    if (k > 0) {
      const got = Buffer.allocUnsafe(k);
      if ((await read(got, 0, k, req.position - k)) !== k || !got.equals(req.before!)) return changedScan(req);
    }
    bytesRead = await read(req.buf, req.at, req.length, req.position);
  }
  return { bytesRead, ...lookAtChunk(req.buf, req.scanFrom, req.at + bytesRead, req.maxLen, crc32, plainRun) };
}

/** Who reads a chunk and looks at it, and on which thread (ScanReader, or READ_HERE). */
export interface ChunkReader {
  read(req: ScanRequest): Promise<ChunkScan>;
  readonly where: 'thread' | 'main';
}

/** Reads on this thread. */
export const READ_HERE: ChunkReader = { read: readHere, where: 'main' };

// The thread's program: CommonJS (an eval'd worker), the CRC from the same
// package util/crc32.ts loads (zlib's, with the same values, where it does
// not load), lookAtChunk and plainRun from their own source.
const WORKER_SOURCE = `'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const { readSync } = require('node:fs');
let crcOf;
try {
  const native = require(workerData.crc32Path);
  crcOf = (data) => native.crc32(data, 0);
} catch {
  const zlib = require('node:zlib');
  crcOf = (data) => zlib.crc32(data, 0);
}
const plainRun = ${plainRun.toString()};
const lookAtChunk = ${lookAtChunk.toString()};
parentPort.on('message', (m) => {
  let reply;
  try {
    const buf = Buffer.from(m.sab, m.offset, m.size);
    const before = m.before ? Buffer.from(m.before.buffer, m.before.byteOffset, m.before.length) : null;
    const got = before && before.length > 0 ? Buffer.allocUnsafe(before.length) : null;
    if (got && (readSync(m.fd, got, 0, got.length, m.position - got.length) !== got.length || !got.equals(before))) {
      reply = { id: m.id, bytesRead: 0, changed: true, lastNewline: -1, runEnd: m.scanFrom, lines: 0, crc: 0 };
    } else {
      const bytesRead = readSync(m.fd, buf, m.at, m.length, m.position);
      reply = { id: m.id, bytesRead, ...lookAtChunk(buf, m.scanFrom, m.at + bytesRead, m.maxLen, crcOf, plainRun) };
    }
  } catch (e) {
    reply = { id: m.id, error: { message: String(e && e.message), code: e && e.code, errno: e && e.errno, syscall: e && e.syscall } };
  }
  parentPort.postMessage(reply);
});
parentPort.postMessage({ ready: true });
`;

/** The reader thread, running WORKER_SOURCE. */
export function startReaderThread(): Worker {
  return new Worker(WORKER_SOURCE, { eval: true, workerData: { crc32Path: crc32Path() } });
}

function crc32Path(): string | null {
  try {
    return createRequire(import.meta.url).resolve('@node-rs/crc32');
  } catch {
    return null;
  }
}

interface Pending {
  req: ScanRequest;
  resolve: (scan: ChunkScan) => void;
  reject: (err: Error) => void;
}

type Reply =
  | { ready: true }
  | (ChunkScan & { id: number; error?: undefined })
  | { id: number; error: { message: string; code?: string; errno?: number; syscall?: string } };

/** Reads chunks in the reader thread (started at the first read), or here until it is ready and where it cannot. */
export class ScanReader implements ChunkReader {
  private worker: Worker | null = null;
  /** The thread has said it is ready: reads go to it. */
  private ready = false;
  private onReady: () => void = () => {};
  /** Settles once the thread takes reads, or once it has failed (then every read is done here). */
  readonly started = new Promise<void>((resolve) => (this.onReady = resolve));
  /** The thread failed (or the reader is closed): every read is done here. */
  private here = false;
  private nextId = 0;
  private readonly pending = new Map<number, Pending>();

  /**
   * `onThreadFailed`: the thread could not start or died (reads go on here).
   * `onThreadReady`: the thread has said it is ready (it takes the reads).
   * `startThread`: makes the thread (tests give one that is slow to start).
   */
  constructor(
    private readonly onThreadFailed?: (err: Error) => void,
    private readonly onThreadReady?: () => void,
    private readonly startThread: () => Worker = startReaderThread,
  ) {}

  /** Which thread reads: 'thread' until it fails (or for a reader never used), then 'main'. */
  get where(): 'thread' | 'main' {
    return this.here ? 'main' : 'thread';
  }

  read(req: ScanRequest): Promise<ChunkScan> {
    const sab = req.buf.buffer;
    if (this.here || !(sab instanceof SharedArrayBuffer)) return readHere(req);
    const w = this.worker ?? this.start();
    if (!w || !this.ready) return readHere(req);
    return new Promise<ChunkScan>((resolve, reject) => {
      const id = this.nextId++;
      this.pending.set(id, { req, resolve, reject });
      // Held (ref) only while a read is unanswered: an idle reader does not keep the process alive.
      if (this.pending.size === 1) w.ref();
      w.postMessage({ id, sab, offset: req.buf.byteOffset, size: req.buf.length, fd: req.fd, at: req.at, length: req.length, position: req.position, scanFrom: req.scanFrom, maxLen: req.maxLen, before: req.before });
    });
  }

  /** Stop the thread (the reads are over: the spooler's loop has ended). */
  async close(): Promise<void> {
    this.here = true;
    this.onReady();
    const w = this.worker;
    this.worker = null;
    await w?.terminate();
  }

  private start(): Worker | null {
    let w: Worker;
    try {
      w = this.startThread();
    } catch (err) {
      this.here = true;
      this.onReady();
      this.onThreadFailed?.(err as Error);
      return null;
    }
    w.unref();
    w.on('message', (r: Reply) => this.answer(r));
    w.on('error', (err) => this.failed(err));
    w.on('exit', (code) => this.failed(new Error(`the reader thread exited (code ${code})`)));
    this.worker = w;
    return w;
  }

  private answer(r: Reply): void {
    if ('ready' in r) {
      this.ready = true;
      this.onReady();
      this.onThreadReady?.();
      return;
    }
    const p = this.pending.get(r.id);
    if (!p) return;
    this.pending.delete(r.id);
    if (this.pending.size === 0) this.worker?.unref();
    if (r.error) {
      p.reject(Object.assign(new Error(r.error.message), { code: r.error.code, errno: r.error.errno, syscall: r.error.syscall }));
      return;
    }
    const { bytesRead, lastNewline, runEnd, lines, crc, changed } = r;
    p.resolve(changed ? changedScan(p.req) : { bytesRead, lastNewline, runEnd, lines, crc });
  }

  /** The thread is gone: what it had not answered is read here, and so is every read after. */
  private failed(err: Error): void {
    if (this.worker === null) return;
    this.worker = null;
    this.here = true;
    this.onReady();
    this.onThreadFailed?.(err);
    const left = [...this.pending.values()];
    this.pending.clear();
    for (const p of left) readHere(p.req).then(p.resolve, p.reject);
  }
}
