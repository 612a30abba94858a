// Content-Encoding handling for the Events API: one decodeBody call on the
// threadpool, its failures turned into the answers the platform gives.
//
// Decoded size is bounded while decoding: gzip stops inflating past
// --max-body; zstd (no streaming decoder in Node 20) is sized from its
// headers first (zstd-bound.ts) and decoded only when it cannot grow past
// ZSTD_DECODE_CEILING, so a small bomb costs no memory.
import { decodeBody } from '../../codec/index.js';
import { zstdDecodedBound } from './zstd-bound.js';

/**
 * A zstd body whose blocks could decode past this is refused unread. Twice the
 * limit plus one full block: a one-shot compressor fills every block but the
 * last, so any such body up to the limit fits; only a stream flushed into
 * mostly-empty blocks could be refused below the limit.
 */
export function zstdDecodeCeiling(maxBodyBytes: number): number {
  return 2 * maxBodyBytes + 128 * 1024;
}

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
    const bound = zstdDecodedBound(raw);
    if (bound === null) return { ok: false, status: 400, message: 'the body cannot be decoded as zstd: malformed or truncated frame' };
    if ((bound.declaredBytes ?? 0) > maxBodyBytes || bound.upperBytes > zstdDecodeCeiling(maxBodyBytes)) return tooLarge(maxBodyBytes);
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
