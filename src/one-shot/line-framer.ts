// Frames a byte stream (stdin, or a file read once) into whole lines for the
// batcher: the stream counterpart of the tailer's framing. A partial last
// line is carried to the next chunk; at the end of the input it is sent as a
// whole line. A line longer than max_line_bytes stops being kept: its first
// max_line_bytes bytes go to the dead letter, with the full length.
import type { Batcher, TrackedFileRef } from '../batcher/batcher.js';

export class LineFramer {
  private carry: Buffer = Buffer.alloc(0);
  private offset = 0;
  private skipping: { start: number; total: number; head: Buffer } | null = null;

  constructor(
    private readonly file: TrackedFileRef,
    private readonly batcher: Batcher,
    private readonly maxLineBytes: number,
  ) {}

  push(chunk: Buffer): void {
    let data = chunk;
    if (this.skipping) {
      const nl = data.indexOf(10);
      if (nl === -1) {
        this.skipping.total += data.length;
        return;
      }
      const s = this.skipping;
      let content = s.total + nl;
      if (nl > 0 ? data[nl - 1] === 13 : false) content--;
      const end = s.start + s.total + nl + 1;
      this.batcher.tooLong(this.file, s.head, content, s.start, end);
      this.skipping = null;
      this.offset = end;
      data = data.subarray(nl + 1);
    } else if (this.carry.length > 0) {
      data = Buffer.concat([this.carry, data]);
    }
    const last = data.lastIndexOf(10);
    if (last >= 0) {
      this.batcher.append(this.file, data, 0, last + 1, this.offset);
      this.offset += last + 1;
    }
    this.carry = Buffer.from(data.subarray(last + 1));
    if (this.carry.length > this.maxLineBytes) {
      this.skipping = { start: this.offset, total: this.carry.length, head: this.carry.subarray(0, this.maxLineBytes) };
      this.carry = Buffer.alloc(0);
    }
  }

  /** End of input: the remainder is one whole line. */
  end(): void {
    if (this.skipping) {
      const s = this.skipping;
      this.batcher.tooLong(this.file, s.head, s.total, s.start, s.start + s.total);
    } else if (this.carry.length > 0) {
      const line = Buffer.concat([this.carry, Buffer.from('\n')]);
      this.batcher.append(this.file, line, 0, line.length, this.offset);
    }
    this.skipping = null;
    this.carry = Buffer.alloc(0);
  }
}
