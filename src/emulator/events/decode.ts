// Content-Encoding handling for the Events API: one decodeBody call on the
// threadpool, its failures turned into the answers the platform gives.
import { decodeBody } from '../../codec/index.js';
import { BLOCK_MAX_BYTES, zstdDecodedBound } from './zstd-bound.js';

export interface DecodeFailure {
  ok: false;
  status: 400 | 413;
  message: string;
}

export type DecodeResult = { ok: true; body: Buffer } | DecodeFailure;

export async function decodeEventsBody(encoding: string | undefined, raw: Buffer, maxBodyBytes: number): Promise<DecodeResult> {
  const enc = (encoding ?? '').trim().toLowerCase();
  if (enc !== '' && enc !== 'identity' && enc !== 'gzip' && enc !== 'zstd') {
    return { ok: false, status: 400, message: `unsupported Content-Encoding "${encoding}"; send gzip, zstd or an uncompressed body` };
  }
  if (enc === 'zstd') {
    // Refuse what cannot fit before decoding it: a compressed block's bound
    // (128 KiB) may exceed what it holds, so a body of exactly the limit is
    // still decoded, and its real size checked below.
    const bound = zstdDecodedBound(raw);
    if (!bound.ok) return { ok: false, status: 400, message: `the body cannot be decoded as zstd: ${bound.why}` };
    if (bound.maxBytes > maxBodyBytes + BLOCK_MAX_BYTES * Math.max(1, bound.frames)) return tooLarge(maxBodyBytes);
  }
  try {
    const body = await decodeBody(enc, raw, maxBodyBytes);
    if (body.length > maxBodyBytes) return tooLarge(maxBodyBytes);
    return { ok: true, body };
  } catch (err) {
    // gzip stops inflating past maxBodyBytes + 1 (zlib's maxOutputLength) with this code.
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') return tooLarge(maxBodyBytes);
    return { ok: false, status: 400, message: `the body cannot be decoded as ${enc || 'identity'}: ${(err as Error).message}` };
  }
}

export function tooLarge(maxBodyBytes: number): DecodeFailure {
  return { ok: false, status: 413, message: `the body exceeds the size limit of ${maxBodyBytes} bytes; send smaller batches` };
}
