// File-system helpers for crash-safe state: atomic replace with a `.prev`
// fallback (docs/guarantees.md rule 2) and directory fsync.
import { promises as fsp, constants as fsc } from 'node:fs';
import path from 'node:path';
import { crashNow, shouldCrash } from './crashpoint.js';

export async function fsyncDir(dir: string): Promise<void> {
  const fh = await fsp.open(dir, fsc.O_RDONLY);
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * Replace `file` atomically (`data` whole, or as chunks of text written in
 * order): write `file.tmp`, fsync it, keep the current
 * version as `file.prev`, rename tmp over `file`, fsync the directory. A crash
 * at any point leaves either the old or the new version readable under `file`
 * or `file.prev`.
 */
export async function atomicWrite(file: string, data: Buffer | string | readonly string[]): Promise<void> {
  const tmp = `${file}.tmp`;
  const fh = await fsp.open(tmp, 'w');
  try {
    // Chunks are written one after the other (a large checkpoint is never one string).
    if (Array.isArray(data)) for (const chunk of data as readonly string[]) await fh.writeFile(chunk);
    else await fh.writeFile(data as Buffer | string);
    await fh.sync();
  } catch (err) {
    // A full disk: the half-written copy would hold space the way out needs.
    await fh.close().catch(() => undefined);
    await fsp.rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
  await fh.close();
  try {
    await fsp.copyFile(file, `${file}.prev`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  // Test crash point: die with the new version written but not yet renamed.
  if (shouldCrash('checkpoint-rename')) crashNow();
  await fsp.rename(tmp, file);
  await fsyncDir(path.dirname(file));
}

export function isErrno(err: unknown, ...codes: string[]): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && codes.includes(code);
}
