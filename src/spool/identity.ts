// File identity = device + inode + a fingerprint of the first bytes, so a
// renamed file keeps its progress and a reused inode (delete, then create)
// is recognised as a new file.
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { openRegular } from './open.js';

/** How many leading bytes the fingerprint covers (fewer while the file is smaller). */
export const FINGERPRINT_BYTES = 256;

export interface Fingerprint {
  fp: string;
  fpLen: number;
}

/** The first `len` bytes of an open file (fewer when it is shorter). */
async function readFirst(fh: FileHandle, len: number): Promise<Buffer> {
  const buf = Buffer.alloc(len);
  let got = 0;
  while (got < len) {
    const { bytesRead } = await fh.read(buf, got, len - got, got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return buf.subarray(0, got);
}

export function fingerprintOf(head: Buffer): Fingerprint {
  return { fp: createHash('sha1').update(head).digest('hex'), fpLen: head.length };
}

export async function fingerprint(fh: FileHandle, size: number): Promise<Fingerprint> {
  return fingerprintOf(await readFirst(fh, Math.min(size, FINGERPRINT_BYTES)));
}

/** Does the file still start with the bytes we fingerprinted? */
export async function sameContentStart(fh: FileHandle, size: number, known: Fingerprint): Promise<boolean> {
  if (size < known.fpLen) return false;
  return headMatches(await readFirst(fh, known.fpLen), size, known);
}

/** The first bytes of a file, as read at once by a scan (null when it is gone or no longer that inode). */
export interface FileHead {
  head: Buffer;
  mtimeMs: number;
}

export async function readHead(p: string, dev: number, ino: number): Promise<FileHead | null> {
  const opened = await openRegular(p);
  if (!opened) return null;
  const { fh, st } = opened;
  try {
    if (st.dev !== dev || st.ino !== ino) return null;
    return { head: await readFirst(fh, Math.min(st.size, FINGERPRINT_BYTES)), mtimeMs: st.mtimeMs };
  } catch {
    return null;
  } finally {
    await fh.close();
  }
}

/** sameContentStart, on first bytes already read. */
export function headMatches(head: Buffer, size: number, known: Fingerprint): boolean {
  if (size < known.fpLen || head.length < known.fpLen) return false;
  return fingerprintOf(head.subarray(0, known.fpLen)).fp === known.fp;
}

export function fileKey(dev: number, ino: number, gen: number): string {
  return `${dev}:${ino}:${gen}`;
}

export async function statPath(p: string): Promise<{ dev: number; ino: number; size: number; mtimeMs: number } | null> {
  try {
    const st = await fsp.stat(p);
    return st.isFile() ? { dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs } : null;
  } catch {
    return null;
  }
}
