// Reads at an offset through a tailer's descriptor: a line read back whole
// (readAt), and the last bytes a tailer read, just before its read offset,
// checked before its next read (LastBytes; ScanRequest.before). A file
// truncated and written past that offset between two reads never shows a
// size below it, and with the same first lines its start looks the same;
// read on, an old partial line was joined to new bytes (a row in no file)
// and the new lines past the offset were shipped twice.
import type { FileHandle } from 'node:fs/promises';

const LAST_BYTES = 16;

export class LastBytes {
  private readonly bytes = Buffer.alloc(LAST_BYTES);
  private len = 0;

  /** Keep src[from, to)'s last bytes (they end at the read offset). */
  keep(src: Buffer, from: number, to: number): void {
    const start = Math.max(from, to - LAST_BYTES);
    src.copy(this.bytes, 0, start, to);
    this.len = to - start;
  }

  /** None known (after a start from the state, or a reset to 0): nothing to check. */
  clear(): void {
    this.len = 0;
  }

  /** The bytes to check, if any. */
  get(): Uint8Array | undefined {
    return this.len > 0 ? this.bytes.subarray(0, this.len) : undefined;
  }

  /** Does the file still have them just before `offset`? (Read here: the long-line path's check.) */
  async stillBefore(fh: FileHandle, offset: number): Promise<boolean> {
    if (this.len === 0) return true;
    return (await readAt(fh, offset - this.len, this.len)).equals(this.bytes.subarray(0, this.len));
  }
}

/** `len` bytes of the file from `pos` (fewer only if the file is shorter now). */
export async function readAt(fh: FileHandle, pos: number, len: number): Promise<Buffer> {
  const out = Buffer.allocUnsafe(len);
  let got = 0;
  while (got < len) {
    const { bytesRead } = await fh.read(out, got, len - got, pos + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return got === len ? out : out.subarray(0, got);
}
