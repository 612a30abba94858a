// Listing the spool: the files under the scan's roots, and a file by its
// inode (a rotated file looked for in its directory).
import { promises as fsp } from 'node:fs';
import path from 'node:path';

/** Every file (or symlink) under each root, down to its depth, sorted. */
export async function listFiles(roots: ReadonlyArray<{ dir: string; depth: number }>): Promise<string[]> {
  const out = new Set<string>();
  for (const root of roots) await walk(path.normalize(root.dir), root.depth, out);
  return [...out].sort();
}

async function walk(dir: string, depth: number, out: Set<string>): Promise<void> {
  if (depth <= 0) return;
  let entries;
  try {
    entries = await fsp.readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  // `dir` is normalized (a normalized root, then names): concatenating is
  // path.join without its normalizing garbage (10,000 paths per scan).
  const base = dir.endsWith(path.sep) ? dir : dir + path.sep;
  for (const e of entries) {
    const p = base + e.name;
    if (e.isDirectory()) await walk(p, depth - 1, out);
    else if (e.isFile() || e.isSymbolicLink()) out.add(p);
  }
}

/** The path in `dir` of the file with this dev and inode, if any. */
export async function findByInode(dir: string, dev: number, ino: number): Promise<string | null> {
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch {
    return null;
  }
  for (const n of names) {
    const p = path.join(dir, n);
    const st = await fsp.stat(p).catch(() => null);
    if (st && st.dev === dev && st.ino === ino) return p;
  }
  return null;
}
