// A compressed body as the sender sees it: its bytes in memory, or held in a
// file that is already unlinked (pipeline/held-bodies.ts moves bodies there
// once those in memory pass a bound, so that slow answers, which keep many
// requests in flight, do not grow RSS by up to max_in_flight_bytes). Either way
// every attempt sends exactly the same bytes (README "Delivery guarantee": byte-identical
// retries), and the file, having no name, cannot be removed or changed by
// anyone else, nor outlive the process.
import type { FileHandle } from 'node:fs/promises';
import type { BodyDrops } from '../util/scavenge.js';

/** Bytes read per step when a spilled body is sent. */
const CHUNK = 64 * 1024;

export class SpilledBody {
  /**
   * `drops`: told when a step of `bytes` that was sent is no longer referenced here
   * (`sent`: util/scavenge.ts gives such buffers back soon: every attempt
   * reads the body anew, and at 1-2 s answers ~50 MB of them a round trip
   * would otherwise wait for V8's next full collection).
   */
  constructor(
    private readonly fh: FileHandle,
    readonly length: number,
    private readonly drops?: BodyDrops,
  ) {}

  /** The whole body in memory again (a 400's split, the disk queue, dead letters). */
  async bytes(): Promise<Buffer> {
    const buf = Buffer.allocUnsafe(this.length);
    for (let pos = 0; pos < this.length; ) pos += await this.readAt(buf, pos, this.length - pos, pos);
    return buf;
  }

  /** The body in steps of 64 KiB, for a request (http-client.ts streams it with a content-length). */
  async *chunks(): AsyncGenerator<Buffer> {
    let sent = 0;
    try {
      for (let pos = 0; pos < this.length; ) {
        const buf = Buffer.allocUnsafe(Math.min(CHUNK, this.length - pos));
        const n = await this.readAt(buf, 0, buf.length, pos);
        pos += n;
        // Asked for the next step: the request has written this one out.
        yield n === buf.length ? buf : buf.subarray(0, n);
        sent += buf.length;
        if (sent >= CHUNK * 4) {
          this.drops?.dropped(sent, 'sent');
          sent = 0;
        }
      }
    } finally {
      if (sent > 0) this.drops?.dropped(sent, 'sent');
    }
  }

  /** The file goes once every read under way has ended (FileHandle.close waits for them); later reads fail. */
  close(): Promise<void> {
    return this.fh.close();
  }

  private async readAt(buf: Buffer, offset: number, len: number, pos: number): Promise<number> {
    const { bytesRead } = await this.fh.read(buf, offset, len, pos);
    if (bytesRead === 0) throw new Error(`spilled body ended at ${pos} of ${this.length} bytes`);
    return bytesRead;
  }
}

/** A compressed body: in memory, or spilled. `length` is its size either way. */
export type Body = Buffer | SpilledBody;

export function bodyBytes(body: Body): Promise<Buffer> {
  return Buffer.isBuffer(body) ? Promise.resolve(body) : body.bytes();
}
