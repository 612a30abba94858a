// Listing the spool: the files under the scan's roots, and the files of a
// directory by inode (a rotated file looked for where it was, and where
// logrotate's olddir may have put it).
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { mapLimit } from '../util/concurrency.js';

/**
 * Every file (or symlink) under each root, down to its depth, sorted.
 * `links` maps each path reached through a symlink to that symlink: the path
 * itself for a linked file, the directory's link for the files in a linked
 * directory (a Data Source directory that is a symlink is walked like any
 * other; spool.follow_symlinks decides whether its files are read).
 */
export async function listFiles(roots: ReadonlyArray<{ dir: string; depth: number }>, readdir: typeof fsp.readdir = fsp.readdir): Promise<SpoolListing> {
  const w: Walk = { out: new Set(), links: new Map(), failed: [], dirs: new Map(), readdir };
  for (const root of roots) await walk(w, path.normalize(root.dir), root.depth, null);
  return { paths: [...w.out].sort(), links: w.links, failed: w.failed, dirs: [...w.dirs.keys()], dirLinks: new Map([...w.dirs].filter((e): e is [string, string] => e[1] !== null)) };
}

export interface SpoolListing {
  paths: string[];
  links: Map<string, string>;
  /**
   * Directories that could not be listed (EMFILE, EIO, ESTALE, EACCES...):
   * what is under them is unknown this time, not gone. A directory that does
   * not exist (ENOENT, ENOTDIR) is no failure: its files are gone.
   */
  failed: Array<{ dir: string; code: string }>;
  /** The directories listed (the directory watch follows them: dir-watcher.ts). */
  dirs: string[];
  /** Of those, the ones reached through a symlink, with that link (what `links` says of each file in them). */
  dirLinks?: Map<string, string>;
}

interface Walk {
  out: Set<string>;
  links: Map<string, string>;
  failed: SpoolListing['failed'];
  /** Each directory listed, with the link it was reached through (null: none). */
  dirs: Map<string, string | null>;
  readdir: typeof fsp.readdir;
}

async function walk(w: Walk, dir: string, depth: number, viaLink: string | null): Promise<void> {
  if (depth <= 0) return;
  const { out, links } = w;
  let entries;
  try {
    entries = await w.readdir(dir, { withFileTypes: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
    if (code !== 'ENOENT' && code !== 'ENOTDIR') w.failed.push({ dir, code });
    return;
  }
  w.dirs.set(dir, w.dirs.get(dir) ?? viaLink);
  // `dir` is normalized (a normalized root, then names): concatenating is
  // path.join without its normalizing garbage (10,000 paths per scan).
  const base = dir.endsWith(path.sep) ? dir : dir + path.sep;
  for (const e of entries) {
    const p = base + e.name;
    if (e.isDirectory()) await walk(w, p, depth - 1, viaLink);
    else if (e.isFile()) {
      out.add(p);
      if (viaLink !== null) links.set(p, viaLink);
    } else if (e.isSymbolicLink()) {
      // A link to a directory is walked (its files carry the link); to
      // anything else it is a candidate file. Depth bounds a link loop.
      const target = depth > 1 ? await fsp.stat(p).catch(() => null) : null;
      if (target?.isDirectory()) await walk(w, p, depth - 1, viaLink ?? p);
      else {
        out.add(p);
        links.set(p, viaLink ?? p);
      }
    }
  }
}

/** Files checked at once when a directory is listed by inode. */
const STAT_CONCURRENCY = 32;

/** dev:ino -> paths, of the files in a directory (empty when it cannot be read). */
export async function listInodes(dir: string): Promise<Map<string, string[]>> {
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  const out = new Map<string, string[]>();
  await mapLimit(names, STAT_CONCURRENCY, async (n) => {
    const p = path.join(dir, n);
    const st = await fsp.stat(p).catch(() => null);
    if (!st) return;
    const id = `${st.dev}:${st.ino}`;
    const paths = out.get(id);
    if (paths) paths.push(p);
    else out.set(id, [p]);
  });
  // Hard links: in name order, whatever order the stats finished in.
  for (const paths of out.values()) paths.sort();
  return out;
}

/** The regular files of `dir` (not through links), in name order, with what a copy's search needs of them (recovery/copies.ts). */
export async function regularFilesIn(dir: string): Promise<Array<{ path: string; size: number; dev: number; ino: number }>> {
  const names = (await fsp.readdir(dir).catch(() => [] as string[])).sort();
  const found = await mapLimit(names, STAT_CONCURRENCY, async (n) => {
    const p = path.join(dir, n);
    const st = await fsp.lstat(p).catch(() => null);
    return st?.isFile() ? { path: p, size: st.size, dev: st.dev, ino: st.ino } : null;
  });
  return found.filter((f) => f !== null);
}

/** The path in `dir` of the file with this dev and inode, if any. */
export async function findByInode(dir: string, dev: number, ino: number): Promise<string | null> {
  return (await listInodes(dir)).get(`${dev}:${ino}`)?.[0] ?? null;
}

/** Directories looked through for a file moved away while its descriptor was closed. */
const MAX_NEARBY_DIRS = 64;

/**
 * Where logrotate's olddir usually is, for a file that was in `dir`: the
 * directories in `dir` (`olddir old`), those beside it (`olddir
 * ../archive`) and those beside its parent (`olddir ../../archive`: beside
 * spool.dir, for a file in a Data Source directory), at most
 * MAX_NEARBY_DIRS, in that order and in name order. An olddir anywhere else
 * is only followed through a descriptor still open at the move.
 */
export async function nearbyDirs(dir: string): Promise<string[]> {
  const subdirs = async (d: string): Promise<string[]> => {
    const entries = await fsp.readdir(d, { withFileTypes: true }).catch(() => []);
    return entries.filter((e) => e.isDirectory()).map((e) => path.join(d, e.name)).sort();
  };
  const besideOf = async (d: string): Promise<string[]> => {
    const parent = path.dirname(d);
    return parent === d ? [] : (await subdirs(parent)).filter((x) => x !== d);
  };
  return [...(await subdirs(dir)), ...(await besideOf(dir)), ...(await besideOf(path.dirname(dir)))].slice(0, MAX_NEARBY_DIRS);
}
