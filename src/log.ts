// pino, JSON by default; `pretty` (or `auto` on a TTY) through pino-pretty.
// One event per state change, never per line; secrets are never logged
// (tokens are not passed to the logger, and `authorization` is redacted in
// case a request object ever is).
import { createRequire } from 'node:module';
import pino, { type Logger } from 'pino';
import type PinoPretty from 'pino-pretty';

export type { Logger };

export function createLogger(
  opts: { level: string; format: 'auto' | 'json' | 'pretty' },
  stream: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr,
): Logger {
  const usePretty = opts.format === 'pretty' || (opts.format === 'auto' && stream.isTTY === true);
  const base = { level: opts.level, base: { pid: process.pid }, redact: ['*.authorization', '*.token', 'token'] };
  if (usePretty) {
    // Loaded only for pretty output: pino-pretty costs ~11 MB of RSS.
    const pretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
    return pino(base, pretty({ destination: stream, colorize: stream.isTTY === true, sync: true, ignore: 'pid,hostname' }));
  }
  // JSON for machines and people alike: the level as a word, the time in ISO 8601.
  return pino(
    { ...base, formatters: { level: (label) => ({ level: label }) }, timestamp: pino.stdTimeFunctions.isoTime },
    pino.destination({ dest: streamFd(stream), sync: true }),
  );
}

function streamFd(stream: NodeJS.WritableStream): number {
  const fd = (stream as unknown as { fd?: number }).fd;
  return typeof fd === 'number' ? fd : 2;
}
