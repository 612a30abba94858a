// Compression behind one small interface, so that Node's built-in zstd
// (node:zlib zstdCompress, Node >= 22.15) can replace @mongodb-js/zstd later
// without touching the pipeline. Every codec runs on the libuv threadpool:
// the main thread keeps reading and framing while batches compress.
//
// Determinism matters: a retried batch must be byte-identical to its first
// attempt. We keep the compressed bytes for retries, and after a crash we
// re-compress the same uncompressed bytes at the same level, which zstd and
// gzip reproduce exactly for a given library version; zstd's parts
// (parts.ts) are cut where the bytes alone say.
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import zlib from 'node:zlib';

// @mongodb-js/zstd 1.2.2's index.js drops the level (every level compresses
// as 3); its native binding takes it, so call the binding directly.
interface ZstdBinding {
  compress(data: Buffer, level?: number | null): Promise<Buffer>;
  decompress(data: Buffer): Promise<Buffer>;
}
const zstd = createRequire(import.meta.url)('@mongodb-js/zstd/bindings.js') as ZstdBinding;

import type { CodecName } from './levels.js';
import { PART_BYTES, partsOf } from './parts.js';

export type { CodecName };

/** Runs one part's compression when a compression thread is free (the pipeline's slots); by default at once. */
export type CompressTurn = (compress: () => Promise<Buffer>) => Promise<Buffer>;

export interface Codec {
  readonly name: CodecName;
  /** Value of the Content-Encoding header, or null for an uncompressed body. */
  readonly contentEncoding: 'zstd' | 'gzip' | null;
  /** Raw bytes per part when a body is cut into parts compressed in parallel (zstd: PART_BYTES), or null: one batch per thread. */
  readonly partBytes: number | null;
  /**
   * The body's frames, in order: zstd cuts `data` into parts (parts.ts) and
   * compresses them in parallel, each in its own `turn`; gzip and none give
   * one. Their concatenation is the body, a pure function of `data`.
   */
  compressFrames(data: Buffer, turn?: CompressTurn): Promise<Buffer[]>;
  /** The whole body in one buffer (compressFrames concatenated). */
  compress(data: Buffer): Promise<Buffer>;
}

const gzipAsync = promisify(zlib.gzip);
const gunzipAsync = promisify(zlib.gunzip);

const atOnce: CompressTurn = (compress) => compress();

function codec(name: CodecName, contentEncoding: Codec['contentEncoding'], partBytes: number | null, compressFrames: Codec['compressFrames']): Codec {
  return {
    name,
    contentEncoding,
    partBytes,
    compressFrames,
    compress: async (data) => {
      const frames = await compressFrames(data);
      return frames.length === 1 ? frames[0]! : Buffer.concat(frames);
    },
  };
}

export function createCodec(name: CodecName, level: number): Codec {
  switch (name) {
    case 'zstd':
      // Only zstd is cut into parts: every zstd decoder reads concatenated
      // frames, while gzip readers that stop after the first member exist.
      return codec(name, 'zstd', PART_BYTES, (data, turn = atOnce) => Promise.all(partsOf(data, PART_BYTES).map((part) => turn(() => zstd.compress(part, level)))));
    case 'gzip':
      return codec(name, 'gzip', null, async (data, turn = atOnce) => [await turn(() => gzipAsync(data, { level }))]);
    case 'none':
      return codec(name, null, null, async (data) => [data]);
  }
}

export { CODEC_LEVELS } from './levels.js';

export class UnsupportedEncodingError extends Error {
  readonly code = 'SPOOLSHIP_ERR_UNSUPPORTED_ENCODING';
}

/**
 * Decode a request or response body by its Content-Encoding, in one call on
 * the threadpool. `maxBytes` bounds the decoded size for gzip (zlib enforces
 * it while inflating); zstd's one-shot API has no such bound, so its result is
 * checked after decoding.
 */
export async function decodeBody(encoding: string | undefined, body: Buffer, maxBytes?: number): Promise<Buffer> {
  const enc = (encoding ?? '').trim().toLowerCase();
  if (enc === '' || enc === 'identity') return body;
  if (enc === 'gzip' || enc === 'x-gzip') {
    return gunzipAsync(body, maxBytes === undefined ? {} : { maxOutputLength: maxBytes + 1 });
  }
  if (enc === 'zstd') return zstd.decompress(body);
  throw new UnsupportedEncodingError(`unsupported Content-Encoding ${JSON.stringify(encoding)}`);
}
