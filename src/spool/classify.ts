// The first step of a scan: say what each listed path is, and what each
// followed file no path was found for is, without changing anything. The
// second step (discovery.ts) applies the findings one after another in path
// order. Classifying reads (stats, first bytes, a refused open's errno) but
// never moves a tailer, writes the state or reports an event, so each
// decision below can be read, and tested, as one rule.
//
// What a file can be (docs/architecture.md "A scan"):
//   followed      a file read now, at the listed path (perhaps renamed
//                 there, or back from being renamed away): rotation.ts
//                 checks it for truncation or a replaced start;
//   came back     a finished file found again with its first bytes and no
//                 shorter: it reads on where it was (within forget_after_ms);
//   resumed       a file the state knows (by inode and first bytes): read
//                 from where it was committed;
//   new           read from 0 (from its end with start_at: end in the first
//                 scan); a new generation when its inode had an older file;
//   unreadable    listed, its first bytes refused for permissions: reported
//                 once, tried again next scan, its progress kept;
//   alias         another name of a file this scan found under an earlier
//                 name: it stays at that one;
//   renamed away  followed, at no listed path: detached (rotation.ts) and
//                 read through its descriptor until idle;
//   away          detached already: its size through the descriptor;
//   unlisted      under a directory whose listing failed: unchanged (not
//                 seen is not gone);
//   unmatched     (first scan only) a file the state knows, still at its
//                 path and no listed path's inode, so matched by no pattern
//                 any more: adopted as detached and read to its end.
// Briefly gone and gone (a file of the state no scan finds: kept for
// forget_after_ms, then forgotten) are completion.ts's, after reading.
import { promises as fsp, type Stats } from 'node:fs';
import { mapLimit } from '../util/concurrency.js';
import type { FileProgress } from '../state/progress.js';
import { sameAsSeen, type StateStore } from '../state/store.js';
import { headMatches, readHead, type FileHead } from './identity.js';
import type { KnownFiles } from './known-files.js';
import type { AdmittedFile } from './admission.js';
import { openRegularOrRefused } from './open.js';
import type { FileTailer } from './tailer.js';
import { followed, type Tailers } from './tailers.js';

/** A listed path, after the scan's stat and first-bytes read. */
export interface Listed {
  p: string;
  ds: string;
  st: Stats | null;
  head: FileHead | null;
  /** The symlink the path is reached through (itself, or its linked directory), if any. */
  link?: string | null;
}

export type PathFinding =
  | { kind: 'followed'; t: FileTailer; p: string; st: Stats }
  | { kind: 'came back'; t: FileTailer; p: string; st: Stats }
  | { kind: 'resumed'; fp: Readonly<FileProgress>; resume: number; p: string; ds: string; st: Stats; head: FileHead | null }
  | { kind: 'new'; gen: number; p: string; ds: string; st: Stats; head: FileHead; link?: string | null }
  | { kind: 'unreadable'; p: string; ds: string; code: string }
  | { kind: 'alias' | 'not a file' | 'vanished'; p: string };

export type UnseenFinding = { kind: 'renamed away' | 'away' | 'unlisted'; t: FileTailer };

export interface Unmatched {
  fp: Readonly<FileProgress>;
  resume: number;
  st: Stats;
}

/** What classifying reads, never changes. */
export interface ClassifyContext {
  readonly tailers: Tailers;
  readonly known: KnownFiles;
  readonly store: Pick<StateStore, 'files' | 'metaOf' | 'seenAtStart' | 'recovery'>;
  readonly firstScan: boolean;
}

/** Where a known file resumes: the offset recovery found for it, else its committed offset. */
function resumeOf(store: ClassifyContext['store'], fp: Readonly<FileProgress>): number {
  return store.recovery.resumeAt.get(fp.meta.key) ?? fp.committed;
}

/**
 * A known file that start-up already found again by identity (fingerprint
 * read then), at this path and with the same size and times: its first
 * bytes need not be read again. Only in the first scan, moments later.
 */
export function verifiedAtStart(c: ClassifyContext, p: string, st: Stats): string | null {
  if (!c.firstScan) return null;
  for (const fp of c.known.of(st.dev, st.ino)) {
    if (fp.meta.path === p && sameAsSeen(c.store.seenAtStart(fp.meta.key), st)) return fp.meta.key;
  }
  return null;
}

/**
 * Stat each path of a slice, and read the first bytes of those classifying
 * needs them for (not followed, not verified at start-up), `concurrency` at
 * a time.
 */
/** A listed path to look at, with the file it was admitted for (admission.ts). */
export interface Candidate {
  p: string;
  ds: string;
  file: AdmittedFile;
  /** The symlink it is reached through, if any. */
  link?: string | null;
}

/** Another file at the path than the one admitted (a link flipped since): not there, for this scan. */
function isAdmitted(file: AdmittedFile, st: Stats): boolean {
  return typeof file === 'string' || (st.dev === file.dev && st.ino === file.ino);
}

export async function look(c: ClassifyContext, slice: readonly Candidate[], concurrency: number): Promise<Listed[]> {
  const stats = await mapLimit(slice, concurrency, async ({ p, file }) => {
    // A path admitted as no link is looked at as one: a link swapped in since is no file here.
    const st = await (file === 'not a link' ? fsp.lstat(p) : fsp.stat(p)).catch(() => null);
    return st && isAdmitted(file, st) ? st : null;
  });
  const heads = await mapLimit(slice, concurrency, async ({ p }, i): Promise<FileHead | null> => {
    const st = stats[i] ?? null;
    return st && needsHead(c, p, st) ? readHead(p, st.dev, st.ino) : null;
  });
  return slice.map(({ p, ds, link }, i) => ({ p, ds, st: stats[i] ?? null, head: heads[i] ?? null, link }));
}

/** Do the first bytes of this listed path need reading to classify it? */
function needsHead(c: ClassifyContext, p: string, st: Stats | null): boolean {
  if (!st?.isFile()) return false;
  const t = c.tailers.ofInode(st.dev, st.ino);
  if (t && followed(t)) return mayBeReused(t, p);
  return !verifiedAtStart(c, p, st);
}

/**
 * A followed file whose descriptor was given back while idle, listed at
 * another path: its inode is free to be reused once the file is deleted, so
 * the inode alone does not say it is the same file. (An open descriptor
 * keeps the inode from being reused; at its own path, a truncation or a new
 * start is rotation.ts's to find.)
 */
function mayBeReused(t: FileTailer, p: string): boolean {
  return t.fh === null && p !== t.path;
}

/**
 * A slice of listed paths, in path order. `claimed`: the inodes (dev:ino)
 * this scan has found a file for so far; it grows with each one found here.
 */
export async function classifySlice(c: ClassifyContext, slice: readonly Listed[], claimed: Set<string>): Promise<PathFinding[]> {
  const out: PathFinding[] = [];
  for (const l of slice) {
    const f = await classifyPath(c, l, claimed);
    if (f.kind === 'followed' || f.kind === 'came back' || f.kind === 'resumed' || f.kind === 'new') claimed.add(`${f.st.dev}:${f.st.ino}`);
    out.push(f);
  }
  return out;
}

/**
 * One listed path. `claimed`: the inodes this scan has already found a file
 * for (dev:ino), in path order; a path whose inode is there is an alias.
 */
export async function classifyPath(c: ClassifyContext, l: Listed, claimed: ReadonlySet<string>): Promise<PathFinding> {
  const { p, ds, st } = l;
  if (!st) return { kind: 'vanished', p };
  if (!st.isFile()) return { kind: 'not a file', p };
  if (claimed.has(`${st.dev}:${st.ino}`)) return { kind: 'alias', p };
  const t = c.tailers.ofInode(st.dev, st.ino);
  // Idle without its descriptor and at another path: the same file only
  // with its first bytes and no shorter (renamed while idle). Otherwise the
  // old file was deleted and a new one, in any Data Source, got its inode:
  // a new generation of the listed path's Data Source. Followed, its lines
  // went to the old file's Data Source, and an empty one was "truncated".
  if (t && followed(t) && (!mayBeReused(t, p) || sameFile(c, t, st, l.head))) return { kind: 'followed', t, p, st };
  // A finished file's descriptor is closed, so its inode can be reused. The
  // same first bytes and no less than was read: renamed back within
  // forget_after_ms, it reads on where it was (read from 0 it was shipped
  // twice). Otherwise a new file under the reused inode: a new generation.
  if (t && !followed(t) && sameFile(c, t, st, l.head)) return { kind: 'came back', t, p, st };
  return known(c, l, st, t ? t.gen + 1 : 0);
}

/** A file without its descriptor found at a matching path: the same file (not deleted, same first bytes, not shorter)? */
function sameFile(c: ClassifyContext, t: FileTailer, st: Stats, head: FileHead | null): boolean {
  const meta = c.store.metaOf(t.key);
  return !t.deleted && head !== null && meta !== undefined && st.size >= t.readOffset && headMatches(head.head, st.size, meta);
}

/** Not followed: known to the state from before (resumed), or new from generation `minGen` on. */
async function known(c: ClassifyContext, l: Listed, st: Stats, minGen: number): Promise<PathFinding> {
  const { p, ds, head } = l;
  const verifiedKey = minGen === 0 ? verifiedAtStart(c, p, st) : null;
  if (!verifiedKey && !head) {
    // Its first bytes could not be read: refused for its permissions (chmod
    // 000 before we first saw it, or while the agent was down), or gone.
    const opened = await openRegularOrRefused(p);
    if (opened && 'fh' in opened) await opened.fh.close().catch(() => undefined);
    return opened && 'refused' in opened ? { kind: 'unreadable', p, ds, code: opened.refused } : { kind: 'vanished', p };
  }
  const fps = c.known.of(st.dev, st.ino);
  for (const fp of fps) {
    // A finished file's inode seen again: a new file, never the old progress.
    if (fp.meta.gen < minGen) continue;
    if (verifiedKey ? fp.meta.key === verifiedKey : headMatches(head!.head, st.size, fp.meta)) {
      const resume = resumeOf(c.store, fp);
      if (st.size >= resume) return { kind: 'resumed', fp, resume, p, ds, st, head };
      break; // truncated while we were down: a new generation below
    }
  }
  const first = head ?? (await readHead(p, st.dev, st.ino));
  if (!first) return { kind: 'vanished', p };
  let gen = minGen;
  for (const fp of fps) gen = Math.max(gen, fp.meta.gen + 1);
  return { kind: 'new', gen, p, ds, st, head: first, link: l.link };
}

/**
 * Followed files no listed path was found for. `seen`: the keys of the
 * files found this scan; `unlisted`: whether a path lies under a directory
 * whose listing failed.
 */
export function classifyUnseen(tailers: Tailers, seen: ReadonlySet<string>, unlisted: (p: string) => boolean): UnseenFinding[] {
  const out: UnseenFinding[] = [];
  for (const t of tailers.list()) {
    if (!followed(t) || seen.has(t.key)) continue;
    if (t.detached) out.push({ kind: 'away', t });
    else if (unlisted(t.path)) out.push({ kind: 'unlisted', t });
    else out.push({ kind: 'renamed away', t });
  }
  return out;
}

/**
 * Files known from before the restart, still at their path (same inode, no
 * shorter than where they resume) but matched by no pattern: no listed path
 * has their inode (`listedInodes`, dev:ino). Renamed out of the patterns
 * while being read, or while the agent was down. "Not followed" alone does
 * not make a file unmatched: a listed file left unread (unreadable, say) is
 * not renamed away.
 */
export async function classifyUnmatched(
  c: ClassifyContext,
  listedInodes: ReadonlySet<string>,
  stat: (p: string) => Promise<Stats | null>,
): Promise<Unmatched[]> {
  const out: Unmatched[] = [];
  for (const fp of c.store.files()) {
    const m = fp.meta;
    if (c.tailers.has(m.key) || c.tailers.ofInode(m.dev, m.ino) || listedInodes.has(`${m.dev}:${m.ino}`)) continue;
    const st = await stat(m.path);
    if (!st || !st.isFile() || st.dev !== m.dev || st.ino !== m.ino) continue;
    const resume = resumeOf(c.store, fp);
    if (st.size >= resume) out.push({ fp, resume, st });
  }
  return out;
}
