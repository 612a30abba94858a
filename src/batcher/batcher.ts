// Longer than ~250 lines: the hot append loop and the buffer reuse it needs
// (ensure, recycle) stay in one file so a profile of the loop reads in one place.
//
// One open batch per Data Source. Whole lines only: a batch body is lines
// each ending in "\n", at most `maxBytes` (or the learned 413 limit)
// uncompressed. The line rules ("\r\n" becomes "\n"; empty lines are
// skipped, their bytes still claimed by the batch so the committed offset
// passes them) are in lines.ts, shared with crash re-forming.
//
// Hot path: the tailer hands over chunks that end on a newline; runs of
// ordinary lines are copied with one Buffer.copy, and no per-line object or
// string is made unless `validate: json` asks for a parse.
//
// Every byte handed over is claimed in Progress, by a batch or by a dead
// letter, in file order (the invariant Progress relies on); a batch's claims
// carry the bytes, whose CRC its intent keeps so that crash re-forming can
// tell the same bytes from other ones at the same offsets.
import { isUtf8 } from 'node:buffer';
import { DEAD_LETTER_OWNER, type Progress, type RangeEntry } from '../state/progress.js';
import { contentEnd as contentEndOf, lineEnd as newlineAt } from './lines.js';
import type { DeadLetterInput } from '../deadletter/store.js';

export interface TrackedFileRef {
  key: string;
  ds: string;
  path: string;
}

export interface ClosedBatch {
  id: number;
  ds: string;
  body: Buffer;
  lines: number;
  /** Clock time when the first line was read (ack latency). */
  firstAt: number;
}

/** Where a new batch's id comes from (StateStore implements it; `send` counts). */
export interface BatchIds {
  newBatchId(): number;
}

/** The current size cap per Data Source: max_bytes, or lower after a 413 (Sender implements it). */
export interface SizeCaps {
  capFor(ds: string): number;
}

export interface BatcherDeps {
  /** Where every byte handed over is claimed (the agent's durable progress, or an in-memory one for `send`). */
  progress: Pick<Progress, 'claim'>;
  batchIds: BatchIds;
  now: () => number;
  maxBytes: number;
  maxLineBytes: number;
  maxOpenBytes: number;
  validateJson: boolean;
  sizeCaps: SizeCaps;
  onClose: (batch: ClosedBatch) => void;
  onDeadLetter: (input: DeadLetterInput, key: string, entry: RangeEntry) => void;
  /** Lines read, per Data Source (metrics). */
  onLinesRead?: (ds: string, lines: number, bytes: number) => void;
}

interface OpenBatch {
  id: number;
  ds: string;
  buf: Buffer;
  len: number;
  lines: number;
  openedAt: number;
  firstAt: number;
  /** Opened as the continuation of a batch that closed full: a backlog is being shipped. */
  afterFull: boolean;
  lastAppendAt: number;
}

/** Uncompressed batch buffers kept for reuse once compressed: saves a 10 MB allocation (and its GC) per batch. */
const SPARE_BUFFERS = 2;
const FIRST_BUFFER_BYTES = 1024 * 1024;

export class Batcher {
  private readonly open = new Map<string, OpenBatch>();
  private openBytesTotal = 0;
  private readonly spare: Buffer[] = [];
  /** Data Sources whose last batch closed full (at its cap or at max_open_bytes). */
  private readonly closedFull = new Set<string>();

  constructor(private readonly deps: BatcherDeps) {}

  get openBytes(): number {
    return this.openBytesTotal;
  }

  /** Hand over buf[from, to): complete lines (buf[to - 1] is "\n") starting at file offset `offset`. */
  append(file: TrackedFileRef, buf: Buffer, from: number, to: number, offset: number): void {
    const { deps } = this;
    const cap = deps.sizeCaps.capFor(file.ds);
    let b = this.batchFor(file.ds);
    let runStart = from;
    let runLines = 0;
    let linesRead = 0;
    const flushRun = (end: number) => {
      if (end > runStart) {
        this.copyInto(b, buf, runStart, end, runLines);
        deps.progress.claim(file.key, offset + (runStart - from), offset + (end - from), b.id, buf.subarray(runStart, end));
      }
      runStart = end;
      runLines = 0;
    };
    let pos = from;
    while (pos < to) {
      const nl = newlineAt(buf, pos, to);
      const next = nl + 1;
      const contentEnd = contentEndOf(buf, pos, nl);
      const hasCr = contentEnd !== nl;
      const contentLen = contentEnd - pos;
      const lineStart = offset + (pos - from);
      const lineEnd = offset + (next - from);
      if (contentLen === 0) {
        // Empty line: nothing to send, but its bytes belong to this batch.
        flushRun(pos);
        deps.progress.claim(file.key, lineStart, lineEnd, b.id, buf.subarray(pos, next));
        runStart = next;
      } else if (contentLen > deps.maxLineBytes || contentLen + 1 > deps.maxBytes) {
        flushRun(pos);
        this.deadLetter(file, buf.subarray(pos, contentEnd), contentLen, lineStart, lineEnd, 'line_too_long');
        runStart = next;
        linesRead++;
      } else if (deps.validateJson && !isJsonObject(buf, pos, contentEnd)) {
        flushRun(pos);
        this.deadLetter(file, buf.subarray(pos, contentEnd), contentLen, lineStart, lineEnd, 'invalid_json');
        runStart = next;
        linesRead++;
      } else {
        linesRead++;
        if (b.len + (pos - runStart) + contentLen + 1 > cap && b.len + (pos - runStart) > 0) {
          flushRun(pos);
          this.close(b, true);
          b = this.batchFor(file.ds);
        }
        if (hasCr) {
          flushRun(pos);
          this.copyInto(b, buf, pos, contentEnd, 1);
          this.appendNewline(b);
          deps.progress.claim(file.key, lineStart, lineEnd, b.id, buf.subarray(pos, next));
          runStart = next;
        } else {
          runLines++;
        }
      }
      pos = next;
    }
    flushRun(to);
    b.lastAppendAt = deps.now();
    deps.onLinesRead?.(file.ds, linesRead, to - from);
    if (b.len >= cap) this.close(b, true);
    this.enforceOpenBytes();
  }

  /** A line the tailer found too long while still reading it (kept truncated to max_line_bytes). */
  tooLong(file: TrackedFileRef, head: Buffer, totalLen: number, start: number, end: number): void {
    this.deadLetter(file, head, totalLen, start, end, 'line_too_long');
    this.deps.onLinesRead?.(file.ds, 1, end - start);
  }

  /** Close batches open for longer than `lingerMs`. */
  closeExpired(lingerMs: number): void {
    const now = this.deps.now();
    for (const b of [...this.open.values()]) if (now - b.openedAt >= lingerMs && b.len > 0) this.close(b);
  }

  /**
   * The end of a backlog: close a batch that continues one closed full, once
   * nothing was appended to it for `quietMs` and `caughtUp(ds)` says every
   * file of its Data Source is read to its known end. Without this the last
   * partial batch of a backlog waits a whole `linger_ms`. Batches of a steady
   * tail never close full, so they keep lingering (one request per
   * `linger_ms`, not one per tick: the request budget is shared).
   */
  closeDrained(quietMs: number, caughtUp: (ds: string) => boolean): void {
    const now = this.deps.now();
    for (const b of [...this.open.values()]) {
      if (b.afterFull && b.len > 0 && now - b.lastAppendAt >= quietMs && caughtUp(b.ds)) this.close(b);
    }
  }

  /** Close every open batch (shutdown, `send` at end of input). */
  closeAll(): void {
    for (const b of [...this.open.values()]) this.close(b);
  }

  private batchFor(ds: string): OpenBatch {
    let b = this.open.get(ds);
    if (!b) {
      const now = this.deps.now();
      const afterFull = this.closedFull.delete(ds);
      b = { id: this.deps.batchIds.newBatchId(), ds, buf: Buffer.allocUnsafe(0), len: 0, lines: 0, openedAt: now, firstAt: now, afterFull, lastAppendAt: now };
      this.open.set(ds, b);
    }
    return b;
  }

  /**
   * Room for `extra` more bytes: a spare full-size buffer when there is one,
   * else 1 MiB, then one jump to the full cap. Doubling from small sizes
   * allocated and copied about twice each batch, and that garbage cost a
   * third of the CPU; a full cap for every small batch would make trickle
   * traffic allocate 10 MB per request.
   */
  private ensure(b: OpenBatch, extra: number): void {
    const need = b.len + extra;
    if (need <= b.buf.length) return;
    const cap = Math.max(this.deps.maxBytes, need);
    let next: Buffer;
    const spareAt = this.spare.findIndex((x) => x.length >= need);
    if (spareAt >= 0) next = this.spare.splice(spareAt, 1)[0]!;
    else next = Buffer.allocUnsafe(b.buf.length === 0 && need <= FIRST_BUFFER_BYTES ? Math.min(cap, FIRST_BUFFER_BYTES) : cap);
    b.buf.copy(next, 0, 0, b.len);
    b.buf = next;
  }

  /** Give back a closed batch's buffer once its body is no longer needed (compressed). */
  recycle(body: Buffer): void {
    // Only a buffer of its own (offset 0): a small one may be a slice of
    // Node's shared pool, whose other bytes belong to someone else.
    if (body.byteOffset !== 0 || body.buffer.byteLength < this.deps.maxBytes || this.spare.length >= SPARE_BUFFERS) return;
    this.spare.push(Buffer.from(body.buffer, 0, body.buffer.byteLength));
  }

  private copyInto(b: OpenBatch, src: Buffer, start: number, end: number, lines: number): void {
    if (b.len === 0) b.firstAt = this.deps.now();
    this.ensure(b, end - start + 1);
    src.copy(b.buf, b.len, start, end);
    b.len += end - start;
    b.lines += lines;
    this.openBytesTotal += end - start;
  }

  private appendNewline(b: OpenBatch): void {
    this.ensure(b, 1);
    b.buf[b.len++] = 10;
    this.openBytesTotal += 1;
  }

  private close(b: OpenBatch, full = false): void {
    this.open.delete(b.ds);
    if (full) this.closedFull.add(b.ds);
    else this.closedFull.delete(b.ds);
    this.openBytesTotal -= b.len;
    this.deps.onClose({ id: b.id, ds: b.ds, body: b.buf.subarray(0, b.len), lines: b.lines, firstAt: b.firstAt });
  }

  private enforceOpenBytes(): void {
    while (this.openBytesTotal > this.deps.maxOpenBytes) {
      let largest: OpenBatch | null = null;
      for (const b of this.open.values()) if (!largest || b.len > largest.len) largest = b;
      if (!largest || largest.len === 0) return;
      this.close(largest, true);
    }
  }

  private deadLetter(
    file: TrackedFileRef,
    line: Buffer,
    totalLen: number,
    start: number,
    end: number,
    reason: 'line_too_long' | 'invalid_json',
  ): void {
    const entry = this.deps.progress.claim(file.key, start, end, DEAD_LETTER_OWNER);
    // A too-long line is kept only up to max_line_bytes (bytes says how long it was).
    const kept = reason === 'line_too_long' ? line.subarray(0, this.deps.maxLineBytes) : line;
    this.deps.onDeadLetter(
      { datasource: file.ds, reason, file: file.path, offset: start, bytes: totalLen, status: null, line: Buffer.from(kept) },
      file.key,
      entry,
    );
  }
}

function isJsonObject(buf: Buffer, start: number, end: number): boolean {
  const slice = buf.subarray(start, end);
  if (!isUtf8(slice)) return false;
  try {
    const v: unknown = JSON.parse(slice.toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}
