// Compression behind one small interface, so that Node's built-in zstd
// (node:zlib zstdCompress, Node >= 22.15) can replace @mongodb-js/zstd later
// without touching the pipeline. Every codec runs on the libuv threadpool:
// the main thread keeps reading and framing while batches compress.
//
// Determinism matters: a retried batch must be byte-identical to its first
// attempt. We keep the compressed bytes for retries, and after a crash we
// re-compress the same uncompressed bytes at the same level, which zstd and
// gzip reproduce exactly for a given library version.
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

export type { CodecName };

export interface Codec {
  readonly name: CodecName;
  /** Value of the Content-Encoding header, or null for an uncompressed body. */
  readonly contentEncoding: 'zstd' | 'gzip' | null;
  compress(data: Buffer): Promise<Buffer>;
}

const gzipAsync = promisify(zlib.gzip);
const gunzipAsync = promisify(zlib.gunzip);

export function createCodec(name: CodecName, level: number): Codec {
  switch (name) {
    case 'zstd':
      return { name, contentEncoding: 'zstd', compress: (data) => zstd.compress(data, level) };
    case 'gzip':
      return { name, contentEncoding: 'gzip', compress: (data) => gzipAsync(data, { level }) };
    case 'none':
      return { name, contentEncoding: null, compress: async (data) => data };
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
