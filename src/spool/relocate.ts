// Finding a tracked file again by identity (device + inode + the first
// bytes, identity.ts) when its recorded path may be stale: renamed while the
// agent was down, or renamed out of the patterns while being read (kill -9
// before the new path was journaled), in its directory or moved to an
// olddir beside it (walk.ts nearbyDirs). The state store asks at start-up
// (StateStoreOptions.relocate), through this injected function: state/ does
// not import the spool. Re-forming a batch asks per file (locateByIdentity).
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { FileMeta } from '../state/journal.js';
import { sameAsSeen, type SeenStat, type VerifiedStat } from '../state/store.js';
import { mapLimit } from '../util/concurrency.js';
import { sameContentStart } from './identity.js';
import { listInodes, nearbyDirs } from './walk.js';

/** Files checked at once during start-up. */
const RELOCATE_CONCURRENCY = 32;

/**
 * Each file found again (at its recorded path, or another name in the same
 * directory), by key, with what the check saw of it; files gone are absent.
 */
export async function relocateFiles(files: ReadonlyArray<{ meta: FileMeta; seen: SeenStat | undefined }>): Promise<Map<string, VerifiedStat>> {
  // Files not at their recorded path are looked up in one listing per directory, not one each.
  const listings = new Map<string, Promise<Map<string, string[]>>>();
  const inodesIn = (dir: string) => {
    let l = listings.get(dir);
    if (!l) listings.set(dir, (l = listInodes(dir)));
    return l;
  };
  const found = new Map<string, VerifiedStat>();
  await mapLimit(files, RELOCATE_CONCURRENCY, async ({ meta, seen }) => {
    const f = (await unchangedSince(meta, seen)) ?? (await findByIdentity(meta, inodesIn));
    if (f) found.set(meta.key, f);
  });
  return found;
}

/** Path of the file with `meta`'s identity: its recorded path, another name in the same directory or in an olddir near it; null when gone. */
export async function locateByIdentity(meta: FileMeta): Promise<string | null> {
  return (await findByIdentity(meta))?.path ?? null;
}

/** The file at its recorded path, when its stat is exactly the one last checked (no need to read its first bytes). */
async function unchangedSince(meta: FileMeta, seen: SeenStat | undefined): Promise<VerifiedStat | null> {
  if (!seen) return null;
  const st = await fsp.stat(meta.path).catch(() => null);
  if (!st?.isFile() || st.dev !== meta.dev || st.ino !== meta.ino || !sameAsSeen(seen, st)) return null;
  return { path: meta.path, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
}

async function findByIdentity(meta: FileMeta, inodesIn: (dir: string) => Promise<Map<string, string[]>> = listInodes): Promise<VerifiedStat | null> {
  const matches = async (p: string): Promise<VerifiedStat | null> => {
    const fh = await fsp.open(p, 'r').catch(() => null);
    if (!fh) return null;
    try {
      const st = await fh.stat();
      const same = st.isFile() && st.dev === meta.dev && st.ino === meta.ino && (await sameContentStart(fh, st.size, meta));
      return same ? { path: p, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs } : null;
    } finally {
      await fh.close();
    }
  };
  const atPath = await matches(meta.path);
  if (atPath) return atPath;
  const inDir = async (dir: string): Promise<VerifiedStat | null> => {
    for (const p of (await inodesIn(dir)).get(`${meta.dev}:${meta.ino}`) ?? []) {
      const found = await matches(p);
      if (found) return found;
    }
    return null;
  };
  const dir = path.dirname(meta.path);
  const here = await inDir(dir);
  if (here) return here;
  // Moved by logrotate's olddir while the agent was down (or killed just
  // after): where a running agent would have looked (spool/rotation.ts).
  for (const d of await nearbyDirs(dir)) {
    const found = await inDir(d);
    if (found) return found;
  }
  return null;
}
