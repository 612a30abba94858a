// Content-Encoding handling for the Events API: one decodeBody call on the
// threadpool, its failures turned into the answers the platform gives.
import { decodeBody } from '../../codec/index.js';

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
