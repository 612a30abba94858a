// Reads a request body with a size bound. Past the bound it stops buffering
// and keeps discarding what the client still sends (counting it), so a huge
// or endless body costs no memory and the client still gets its 413 answer
// on a live connection.
//
// With a pace, the body is read no faster than `bytesPerSec`: past its
// schedule the request is paused (TCP and HTTP/2 flow control then slow the
// client down) until the schedule catches up.
import type { Readable } from 'node:stream';

export interface UploadPace {
  bytesPerSec: number;
  /** A cancellable timer (Delays): close() rejects it and the read fails. */
  delay(delayMs: number): Promise<void>;
  /** Monotonic milliseconds. */
  nowMs(): number;
}

export interface ReadBody {
  body: Buffer;
  /** True when the body (or its declared Content-Length) passed the bound; `body` is then empty. */
  overflow: boolean;
  /** Bytes received so far (the whole body unless overflow). */
  wireBytes: number;
}

const EMPTY = Buffer.alloc(0);

export function readBody(
  req: Readable & { headers: Record<string, string | string[] | undefined> },
  limitBytes: number,
  onBytes: (n: number) => void = () => {},
  pace: UploadPace | null = null,
): Promise<ReadBody> {
  return new Promise((resolve, reject) => {
    const startMs = pace?.nowMs() ?? 0;
    const chunks: Buffer[] = [];
    let size = 0;
    let wireBytes = 0;
    let overflow = false;
    const declared = Number(req.headers['content-length']);
    req.on('data', (chunk: Buffer) => {
      wireBytes += chunk.length;
      onBytes(chunk.length);
      if (pace) holdBack(pace);
      if (overflow) return;
      size += chunk.length;
      if (size > limitBytes) stopBuffering();
      else chunks.push(chunk);
    });
    req.once('end', () => resolve({ body: overflow ? EMPTY : Buffer.concat(chunks, size), overflow, wireBytes }));
    req.once('error', reject);
    req.once('aborted', () => reject(new Error('the client aborted the request')));

    function holdBack(p: UploadPace): void {
      const waitMs = startMs + (wireBytes * 1000) / p.bytesPerSec - p.nowMs();
      if (waitMs < 1) return;
      req.pause();
      p.delay(waitMs).then(() => req.resume(), reject);
    }

    function stopBuffering(): void {
      overflow = true;
      chunks.length = 0;
      resolve({ body: EMPTY, overflow, wireBytes });
    }
    // Refuse a declared oversize body before reading any of it.
    if (Number.isFinite(declared) && declared > limitBytes) stopBuffering();
  });
}
