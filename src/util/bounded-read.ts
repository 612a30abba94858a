// Files the agent reads whole at start and on SIGHUP (the config, the token
// file, the CA bundle): opened without blocking, only when they are regular
// files, and read up to a bound. A config that was a link to /dev/zero took
// the agent to 5 GB of RSS in 13 s; a token file replaced by a FIFO blocked
// the whole process in open() (no signal handled, SIGTERM ignored).
import { closeSync, constants as fsc, fstatSync, openSync, readSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { ConfigError } from '../errors.js';

/** A config of 16 MiB is already absurd. */
export const MAX_CONFIG_FILE_BYTES = 16 * 1024 * 1024;
/** A token, a CA bundle, a certificate or a key: a few KiB; 1 MiB is generous. */
export const MAX_SECRET_FILE_BYTES = 1024 * 1024;

/** The file is not a regular file, or larger than the bound. `code`: ENOTREG or EFBIG. */
export class UnreadableFileError extends Error {
  constructor(
    readonly code: 'ENOTREG' | 'EFBIG',
    file: string,
    why: string,
  ) {
    super(`${file}: ${why}`);
  }
}

const FLAGS = fsc.O_RDONLY | fsc.O_NONBLOCK;

function check(file: string, st: { isFile(): boolean; size: number }, maxBytes: number): void {
  if (!st.isFile()) throw new UnreadableFileError('ENOTREG', file, 'not a regular file (a FIFO, a device, a directory): refused');
  if (st.size > maxBytes) throw new UnreadableFileError('EFBIG', file, `larger than ${maxBytes} bytes: refused`);
}

/** The whole file, if it is a regular file of at most `maxBytes` (errno errors are thrown as they are). */
export function readRegularFileSync(file: string, maxBytes: number): Buffer {
  const fd = openSync(file, FLAGS);
  try {
    check(file, fstatSync(fd), maxBytes);
    // Read to the bound (+1, to see a file that grew past it since the fstat).
    const buf = Buffer.allocUnsafe(maxBytes + 1);
    let got = 0;
    for (let n; got < buf.length && (n = readSync(fd, buf, got, buf.length - got, got)) > 0; ) got += n;
    if (got > maxBytes) throw new UnreadableFileError('EFBIG', file, `larger than ${maxBytes} bytes: refused`);
    return Buffer.from(buf.subarray(0, got));
  } finally {
    closeSync(fd);
  }
}

/**
 * readRegularFileSync for the file a config key names (api.ca_file,
 * limits.redis_ca_file): one that cannot be read is a config error naming
 * the key (exit 2), not an unexpected one with a stack trace.
 */
export function readKeyFileSync(key: string, file: string): Buffer {
  try {
    return readRegularFileSync(file, MAX_SECRET_FILE_BYTES);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (!e.code) throw err;
    throw new ConfigError([{ path: key, value: file, why: `cannot read it (${e.code}); create it or fix the path` }]);
  }
}

/** readRegularFileSync, on the threadpool. */
export async function readRegularFile(file: string, maxBytes: number): Promise<Buffer> {
  const fh = await open(file, FLAGS);
  try {
    const st = await fh.stat();
    check(file, st, maxBytes);
    const buf = Buffer.allocUnsafe(maxBytes + 1);
    let got = 0;
    for (;;) {
      if (got === buf.length) break;
      const { bytesRead } = await fh.read(buf, got, buf.length - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    if (got > maxBytes) throw new UnreadableFileError('EFBIG', file, `larger than ${maxBytes} bytes: refused`);
    return Buffer.from(buf.subarray(0, got));
  } finally {
    await fh.close();
  }
}
