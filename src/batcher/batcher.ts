// Longer than ~250 lines: the hot append loop stays in one file so a profile
// of the loop reads in one place (the buffers it reuses and lends: buffers.ts).
//
// One open batch per Data Source. Whole lines only: a batch body is lines
// each ending in "\n", at most `maxBytes` (or the learned 413 limit)
// uncompressed. The line rules ("\r\n" becomes "\n"; empty lines are
// skipped, their bytes still claimed by the batch so the committed offset
// passes them) are in lines.ts, shared with crash re-forming.
//
// Hot path: the tailer hands over chunks that end on a newline; runs of
// ordinary lines are copied with one Buffer.copy, and no per-line object or
// string is made unless `validate: json` asks for a parse. Ordinary lines (no
// "\r", not empty, not too long: nearly all) take a shorter loop that only
// counts them, up to the first other one. And the tailer reads into
// the open batch's own buffer where it can (`borrow`, buffers.ts): then
// nothing is copied.
//
// Every byte handed over is claimed in Progress, by a batch or by a dead
// letter, in file order (the invariant Progress relies on); a batch's claims
// carry the bytes, whose CRC its intent keeps so that crash re-forming can
// tell the same bytes from other ones at the same offsets.
import { DEAD_LETTER_OWNER, type Progress, type RangeEntry } from '../state/progress.js';
import { contentEnd as contentEndOf, isJsonObject, lineEnd as newlineAt, plainRun, type ChunkLook } from './lines.js';
import type { DeadLetterInput } from '../deadletter/store.js';
import { BatchBuffers, sharedBuffer } from './buffers.js';

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
  /** `input` null: the line's record was written before (only its range is passed); `entry` null: its range comes at its end. */
  onDeadLetter: (input: DeadLetterInput | null, key: string, entry: RangeEntry | null) => void;
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

const FIRST_BUFFER_BYTES = 1024 * 1024;
/**
 * A read into a batch's buffer needs this much room past the carried partial
 * line; a Data Source without an open batch gets a fresh full-size buffer only
 * when this much waits to be read (a trickle is read into the reader's own
 * buffer and copied: a 10 MB buffer per lingering batch would be waste).
 */
export const BORROW_MIN_BYTES = 64 * 1024;

/** Where a reader may put the next bytes of a Data Source's file: `buf[at, at + room)`, the open batch's own buffer past its lines (Batcher.borrow). */
export interface ReadTarget {
  buf: Buffer;
  at: number;
  room: number;
}

export class Batcher {
  private readonly open = new Map<string, OpenBatch>();
  private openBytesTotal = 0;
  /** Data Sources whose last batch closed full (at its cap or at max_open_bytes). */
  private readonly closedFull = new Set<string>();
  private readonly buffers: BatchBuffers;

  constructor(private readonly deps: BatcherDeps) {
    this.buffers = new BatchBuffers(deps.maxBytes);
  }

  get openBytes(): number {
    return this.openBytesTotal;
  }

  /**
   * Where the next bytes read for `ds` may go without a copy: the open
   * batch's buffer past its lines, or (no batch open, `unread` bytes
   * waiting) a fresh full-size buffer that the next batch of `ds` adopts.
   * null: read into your own buffer. `carry`: bytes the reader puts first
   * (its partial line). Give the target back once its bytes are appended.
   */
  borrow(ds: string, carry: number, unread: number): ReadTarget | null {
    const b = this.open.get(ds);
    let buf: Buffer;
    let at = 0;
    if (b) {
      if (b.buf.length === 0) return null;
      buf = b.buf;
      at = b.len;
    } else if (unread >= BORROW_MIN_BYTES) {
      buf = this.buffers.freshFor(ds);
    } else {
      return null;
    }
    // One byte kept free: a chunk ending at the buffer's very end would make
    // copyInto's room check (a possible added newline) move the batch.
    const room = buf.length - at - 1;
    if (room < carry + BORROW_MIN_BYTES || !this.buffers.lend(buf)) return null;
    return { buf, at, room };
  }

  /** The read into a borrowed target is over and its lines are appended. */
  giveBack(target: ReadTarget): void {
    this.buffers.giveBack(target.buf);
  }

  /** plainRun's maxLen, -1 with `validate: json` (no line is ordinary): for a reader's look ahead of `append`. */
  get plainLineLimit(): number {
    return this.deps.validateJson ? -1 : Math.min(this.deps.maxLineBytes, this.deps.maxBytes - 1);
  }

  /**
   * Hand over buf[from, to): complete lines (buf[to - 1] is "\n", or a
   * finished file's remainder, sent with a newline) at file offset
   * `offset`. `look`: the reader's look at it with plainLineLimit (its run
   * of ordinary lines and their CRC): they are not searched again.
   */
  append(file: TrackedFileRef, buf: Buffer, from: number, to: number, offset: number, look?: ChunkLook): void {
    const { deps } = this;
    const cap = deps.sizeCaps.capFor(file.ds);
    // Ordinary lines take the short loop; from the first other line on, the rules line by line.
    const plain = deps.validateJson ? { pos: from, lines: 0 } : this.appendPlain(file, buf, from, to, offset, cap, look);
    const lines = plain.pos < to ? plain.lines + this.appendByRules(file, buf, plain.pos, to, offset + (plain.pos - from), cap) : plain.lines;
    const b = this.batchFor(file.ds);
    b.lastAppendAt = deps.now();
    deps.onLinesRead?.(file.ds, lines, to - from);
    if (b.len >= cap) this.close(b, true);
    this.enforceOpenBytes();
  }

  /** The lines of buf[from, to) by the rules of lines.ts, one at a time; returns the lines read (dead letters included). */
  private appendByRules(file: TrackedFileRef, buf: Buffer, from: number, to: number, offset: number, cap: number): number {
    const { deps } = this;
    let b = this.batchFor(file.ds, buf);
    let runStart = from;
    let runLines = 0;
    let linesRead = 0;
    // Each claim's CRC is taken before the copy: in a borrowed buffer the
    // copy moves lines left over bytes not yet claimed.
    const flushRun = (end: number) => {
      if (end > runStart) {
        deps.progress.claim(file.key, offset + (runStart - from), offset + (end - from), b.id, buf.subarray(runStart, end));
        this.copyInto(b, buf, runStart, end, runLines);
      }
      runStart = end;
      runLines = 0;
    };
    let pos = from;
    while (pos < to) {
      const nl = newlineAt(buf, pos, to);
      // No newline: a finished file's remainder, claimed to the file's end.
      const next = Math.min(nl + 1, to);
      const contentEnd = contentEndOf(buf, pos, nl);
      const rewritten = contentEnd !== nl || nl === to;
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
        if (rewritten) {
          flushRun(pos);
          deps.progress.claim(file.key, lineStart, lineEnd, b.id, buf.subarray(pos, next));
          this.copyInto(b, buf, pos, contentEnd, 1);
          this.appendNewline(b);
          runStart = next;
        } else {
          runLines++;
        }
      }
      pos = next;
    }
    flushRun(to);
    return linesRead;
  }

  /**
   * The leading ordinary lines of buf[from, to) (lines.ts plainRun): the
   * same batches, claims and counts as appendByRules, with one search and
   * two byte checks per line. Returns where it stopped (`to`, or the first
   * line of another kind) and the lines it took.
   */
  private appendPlain(file: TrackedFileRef, buf: Buffer, from: number, to: number, offset: number, cap: number, look?: ChunkLook): { pos: number; lines: number } {
    const { deps } = this;
    const maxLen = this.plainLineLimit;
    let b = this.batchFor(file.ds, buf);
    let pos = from;
    let lines = 0;
    while (pos < to) {
      let end = to;
      if (b.len + (to - pos) > cap) {
        // The lines that fit: up to the last newline within the room.
        const room = cap - b.len;
        const nl = room > 0 ? buf.lastIndexOf(10, pos + room - 1) : -1;
        end = nl >= pos ? nl + 1 : pos;
        if (end === pos) {
          // Not even the next line fits. Only an ordinary one closes the
          // batch here (an empty or too long one does not: appendByRules).
          const next = buf.indexOf(10, pos) + 1;
          if (plainRun(buf, pos, next, maxLen).end !== next) break;
          if (b.len > 0) {
            this.close(b, true);
            b = this.batchFor(file.ds);
            continue;
          }
          // One line longer than the cap (a learned 413 limit) goes alone.
          end = next;
        }
      }
      // Up to the first line of another kind, which appendByRules takes on
      // from (its claim continues this one's range and CRC). The reader's
      // look, when it covers the whole chunk (no batch closes in it), has
      // found that run and its CRC already.
      const looked = look !== undefined && pos === from && end === to;
      const run = looked ? { end: look.runEnd, lines: look.lines } : plainRun(buf, pos, end, maxLen);
      if (run.end > pos) {
        deps.progress.claim(file.key, offset + (pos - from), offset + (run.end - from), b.id, looked ? { crc: look.crc, length: run.end - pos } : buf.subarray(pos, run.end));
        this.copyInto(b, buf, pos, run.end, run.lines);
        lines += run.lines;
        pos = run.end;
      }
      if (pos < end) break;
    }
    return { pos, lines };
  }

  /** A line the tailer found too long while still reading it (kept truncated to max_line_bytes); `head` null: its record was written before its end (tooLongSoFar). */
  tooLong(file: TrackedFileRef, head: Buffer | null, totalLen: number, start: number, end: number): void {
    if (head) this.deadLetter(file, head, totalLen, start, end, 'line_too_long');
    else this.deps.onDeadLetter(null, file.key, this.deps.progress.claim(file.key, start, end, DEAD_LETTER_OWNER));
    this.deps.onLinesRead?.(file.ds, 1, end - start);
  }

  /** A line past max_line_bytes whose end is not written yet: its record now (`bytes`: what was read of it); its bytes are claimed at its end. */
  tooLongSoFar(file: TrackedFileRef, head: Buffer, readLen: number, start: number): void {
    this.deps.onDeadLetter({ datasource: file.ds, reason: 'line_too_long', file: file.path, offset: start, bytes: readLen, status: null, line: Buffer.from(head.subarray(0, this.deps.maxLineBytes)) }, file.key, null);
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

  /** The open batch of `ds`, or a new one; a new one adopts `src` when it is the fresh buffer lent for `ds` (borrow). */
  private batchFor(ds: string, src?: Buffer): OpenBatch {
    let b = this.open.get(ds);
    if (!b) {
      const now = this.deps.now();
      const afterFull = this.closedFull.delete(ds);
      const buf = this.buffers.adopt(ds, src) ?? Buffer.allocUnsafe(0);
      b = { id: this.deps.batchIds.newBatchId(), ds, buf, len: 0, lines: 0, openedAt: now, firstAt: now, afterFull, lastAppendAt: now };
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
    const next = this.buffers.takeSpare(need) ?? sharedBuffer(b.buf.length === 0 && need <= FIRST_BUFFER_BYTES ? Math.min(cap, FIRST_BUFFER_BYTES) : cap);
    b.buf.copy(next, 0, 0, b.len);
    b.buf = next;
  }

  /** Give back a closed batch's buffer once its body is no longer needed (compressed). */
  recycle(body: Buffer): void {
    this.buffers.recycle(body);
  }

  private copyInto(b: OpenBatch, src: Buffer, start: number, end: number, lines: number): void {
    if (b.len === 0) b.firstAt = this.deps.now();
    this.ensure(b, end - start + 1);
    // Read into this very place (a borrowed buffer): nothing to move.
    if (src !== b.buf || start !== b.len) src.copy(b.buf, b.len, start, end);
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

  private deadLetter(file: TrackedFileRef, line: Buffer, totalLen: number, start: number, end: number, reason: 'line_too_long' | 'invalid_json'): void {
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
