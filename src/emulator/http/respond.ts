// Writes an EmuResponse on HTTP/1.1 or HTTP/2 (compat API) responses.
import type { Http2ServerResponse } from 'node:http2';
import type { ServerResponse } from 'node:http';
import type { EmuResponse } from '../types.js';

export type AnyResponse = ServerResponse | Http2ServerResponse;

export function sendResponse(res: AnyResponse, response: EmuResponse): void {
  if (res.headersSent || res.writableEnded || res.destroyed) return;
  let payload: Buffer | string = '';
  let contentType: string | undefined;
  if (Buffer.isBuffer(response.body) || typeof response.body === 'string') {
    payload = response.body;
  } else if (response.body !== undefined) {
    payload = JSON.stringify(response.body);
    contentType = 'application/json';
  }
  const headers: Record<string, string | number> = { ...(response.headers ?? {}) };
  if (contentType !== undefined && !hasHeader(headers, 'content-type')) headers['content-type'] = contentType;
  headers['content-length'] = Buffer.byteLength(payload);
  res.writeHead(response.status, headers);
  res.end(payload);
}

function hasHeader(headers: Record<string, unknown>, name: string): boolean {
  return Object.keys(headers).some((k) => k.toLowerCase() === name);
}
