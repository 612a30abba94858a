// After each scan: files finished and fully committed are forgotten (by the
// spooler and the state) once deleted or gone for forget_after_ms (one that
// comes back sooner reads on where it was: discovery.ts); so are old
// generations of a file (before a copytruncate, or of an inode now reused)
// once nothing read from them is pending, and files the state knows that no
// scan has found for forget_after_ms (deleted while the agent was down).
// With on_complete: delete, a file fully committed (to its end as a stat
// sees it just before: nothing unread), idle for idle_ms and superseded
// (renamed out of the patterns, or a file created after it grows in its
// directory) is deleted and finished, unless it was found through a
// symlink to outside spool.dir and the sources directories (follow_symlinks:
// any; docs/spool.md): the user's own file, kept, and its link too. A
// deletion refused (the directory not writable by the agent, a read-only
// mount) keeps the file: one WARN per streak, tried again at each scan.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { CompletionOptions } from './options.js';
import { statPath } from './identity.js';
import type { FileTailer } from './tailer.js';
import { followed, quietSince, type Tailers } from './tailers.js';

/** Files whose deletion was refused, told once until it works (the tailer is dropped with its file). */
const deleteRefused = new WeakSet<FileTailer>();

/**
 * `unfound`: when each file of the state without a tailer was first missed by
 * a scan (kept by the spooler between scans).
 */
export async function collectFinished(o: CompletionOptions, tailers: Tailers, unfound: Map<string, number>): Promise<void> {
  const store = o.store;
  const now = o.clock.now();
  forgetOldGenerations(o, tailers);
  forgetUnfound(o, tailers, unfound);
  for (const t of tailers.list()) {
    const fp = store.file(t.key);
    const fullyCommitted = fp !== undefined && fp.entries.length === 0 && fp.committed >= t.readOffset && t.carriedBytes === 0;
    // Followed, or renamed away and finished (its partial last line sent whole) but still there.
    // Found through a link to outside the spool: the user's own (docs/spool.md), never deleted.
    const ours = fp?.meta.linkedOutside !== true;
    if (o.onComplete === 'delete' && ours && !t.deleted && (followed(t) || t.detached) && fullyCommitted && t.unreadBytes === 0) {
      const idle = o.clock.now() - quietSince(t) >= o.idleMs;
      if (idle && (await superseded(t, tailers)) && (await unchangedSinceRead(t))) {
        try {
          await fsp.rm(t.path, { force: true });
        } catch (err) {
          if (!deleteRefused.has(t)) o.events.onDeleteFailed?.(t.ds, t.path, (err as NodeJS.ErrnoException).code ?? String(err));
          deleteRefused.add(t);
          continue;
        }
        deleteRefused.delete(t);
        await t.closeFd();
        t.markDeleted();
        t.finish();
        o.events.onFinished(t.ds, t.path, true, true);
      }
    }
    const forgettable = t.deleted || now - (t.goneSince ?? Number.NEGATIVE_INFINITY) >= o.forgetAfterMs;
    if (!followed(t) && fullyCommitted && forgettable) {
      tailers.remove(t);
      store.forgetFile(t.key);
    }
  }
}

/**
 * The file at its path is still this one and ends where reading stands: the
 * scan that found a newer file may have seen it grow too (its new lines
 * not read yet, so not committed), and a write may come after that scan.
 */
async function unchangedSinceRead(t: FileTailer): Promise<boolean> {
  const st = await statPath(t.path);
  return st !== null && st.dev === t.dev && st.ino === t.ino && st.size <= t.readOffset;
}

/**
 * Renamed out of the patterns (not merely matched no more: a reload's new
 * routes, a restart's), or a newer file of its Data Source in the same
 * directory grew after it last did. Newer: created after it (birth time).
 * Two writers in one directory each keep their file: an older file that
 * grows does not supersede a newer one gone quiet. Where the file system
 * keeps no birth time, one that grew after it counts as newer.
 */
async function superseded(t: FileTailer, tailers: Tailers): Promise<boolean> {
  if (t.detached) return t.renamedAway;
  const dir = path.dirname(t.path);
  // Of the same Data Source: a file routed elsewhere (spool.sources) is another stream, not its successor.
  const grewSince = [...tailers.values()].filter((other) => other !== t && followed(other) && other.ds === t.ds && path.dirname(other.path) === dir && other.lastGrowthAt > t.lastGrowthAt);
  if (grewSince.length === 0) return false;
  const born = await birthOf(t);
  for (const other of grewSince) {
    const otherBorn = await birthOf(other);
    if (born === null || otherBorn === null || otherBorn > born) return true;
  }
  return false;
}

/** The file's birth time, while its path still names it; null where the file system keeps none. */
async function birthOf(t: FileTailer): Promise<number | null> {
  const st = await fsp.stat(t.path).catch(() => null);
  return st && st.dev === t.dev && st.ino === t.ino && st.birthtimeMs > 0 ? st.birthtimeMs : null;
}

/**
 * The state's entries of an inode's older generations, once their batches
 * are all done: the inode is followed as a newer generation, so nothing will
 * read them again. Without this every copytruncate added an entry for good
 * (to the checkpoint and to each start-up's relocation).
 */
function forgetOldGenerations(o: CompletionOptions, tailers: Tailers): void {
  const old: string[] = [];
  for (const fp of o.store.files()) {
    const m = fp.meta;
    if (fp.entries.length > 0 || tailers.has(m.key)) continue;
    const current = tailers.ofInode(m.dev, m.ino);
    if (current && current.gen > m.gen) old.push(m.key);
  }
  for (const key of old) o.store.forgetFile(key);
}

/**
 * Files of the state that no scan has found (deleted while the agent was
 * down, or gone before this run followed them): forgotten once nothing read
 * from them is pending and they have been missing for forget_after_ms.
 */
function forgetUnfound(o: CompletionOptions, tailers: Tailers, unfound: Map<string, number>): void {
  const now = o.clock.now();
  const gone: string[] = [];
  const missing = new Set<string>();
  for (const fp of o.store.files()) {
    const key = fp.meta.key;
    if (tailers.has(key)) continue;
    missing.add(key);
    const since = unfound.get(key) ?? now;
    unfound.set(key, since);
    if (fp.entries.length === 0 && now - since >= o.forgetAfterMs) gone.push(key);
  }
  for (const key of unfound.keys()) if (!missing.has(key)) unfound.delete(key);
  for (const key of gone) {
    o.store.forgetFile(key);
    unfound.delete(key);
  }
}
