// Every spool file is opened here: read-only and non-blocking, then checked
// with fstat. A FIFO swapped in between a scan's stat and the open once made
// a threadpool thread wait for a writer forever (open(2) of a FIFO blocks
// until one comes), which stopped all discovery; O_NONBLOCK returns at once,
// and fstat on the descriptor (not a second stat of the path, which could
// race again) refuses anything that is not a regular file.
import { constants, promises as fsp, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';

const READ_NONBLOCK = constants.O_RDONLY | constants.O_NONBLOCK;

export type Opened = { fh: FileHandle; st: Stats };

/** An open refused for the file's permissions (EACCES, EPERM): it is there, not readable now. */
export type Refused = { refused: string };

/** Open `p` if it is a regular file; null when it is gone or is something else (FIFO, device, socket, directory). */
export async function openRegular(p: string): Promise<Opened | null> {
  const opened = await openRegularOrRefused(p);
  return opened && 'fh' in opened ? opened : null;
}

/**
 * openRegular, telling a file the agent may not open apart from one that is
 * gone: a followed file chmod 000 for a while is retried and reported
 * (tailer.ts), never taken for gone.
 */
export async function openRegularOrRefused(p: string): Promise<Opened | Refused | null> {
  let fh: FileHandle;
  try {
    fh = await fsp.open(p, READ_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'EACCES' || code === 'EPERM' ? { refused: code } : null;
  }
  try {
    const st = await fh.stat();
    if (st.isFile()) return { fh, st };
  } catch {
    /* closed below */
  }
  await fh.close().catch(() => undefined);
  return null;
}
