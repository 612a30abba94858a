// A scan, in two steps: list spool.dir and spool.sources (walk.ts,
// routes.ts) and admit each path (admission.ts); then, a slice of paths at
// a time, classify each (classify.ts: followed, came back, resumed, new,
// unreadable, alias) and apply the findings in path order: follow a rename
// or a truncation (rotation.ts), resume a known file where it was
// committed, track a new one. Followed files no listed path was found for
// are detached (renamed away) and read through their descriptors until idle
// (read-loop.ts); in the first scan, files of the state matched by no
// pattern any more are adopted. A directory whose listing failed (EMFILE,
// EIO, ESTALE) changes nothing: its files are not gone.
import { promises as fsp, type Stats } from 'node:fs';
import path from 'node:path';
import { classifySlice, classifyUnmatched, classifyUnseen, look, type Candidate, type ClassifyContext, type PathFinding, type Unmatched } from './classify.js';
import { fileKey, fingerprintOf, sameContentStart } from './identity.js';
import type { KnownFiles } from './known-files.js';
import { checkLayout } from './layout.js';
import type { DiscoveryOptions } from './options.js';
import { atPath, type Rotation } from './rotation.js';
import { FD_BUDGET } from './read-loop.js';
import { FileTailer } from './tailer.js';
import type { Tailers } from './tailers.js';
import { listFiles } from './walk.js';

/**
 * File-system calls a scan keeps going at once. One after another, a scan of
 * 10,000 files spent most of its seconds waiting for round trips to the
 * threadpool; the read loop waits for the scan.
 */
const SCAN_CONCURRENCY = 32;
/**
 * Paths a scan stats and reads the first bytes of before deciding about
 * them. All of them at once (20,000 stats and heads held together) was the
 * many-files run's peak of memory: 75 MB more heap for the first scan.
 */
export const SCAN_SLICE = 1024;

export class Discovery {
  /** True until the first scan has ended (start_at, files verified at start-up, files to adopt). */
  firstScan = true;
  /** The directories the last scan listed (the directory watch follows them). */
  listedDirs: readonly string[] = [];
  /** Of those, the ones reached through a symlink, with the link (lookAt admits a path in them as the scan does). */
  private listedDirLinks: ReadonlyMap<string, string> = new Map();
  /** Descriptors held, counted at the scan's start and as addNew takes them. */
  private openFds = 0;
  /** Directories whose last listing failed (reported once per streak). */
  private failing = new Set<string>();
  /**
   * Paths not yet followed whose first bytes could not be read for their
   * permissions (reported once per streak; followed files: tailer.ts).
   * Pruned to the paths each scan lists, so bounded by the spool.
   */
  private unreadable = new Set<string>();
  /** New files and new generations (truncated, replaced) of the slice, told once their state records are on disk (told()). */
  private tells: Array<() => void> = [];

  constructor(
    private readonly o: DiscoveryOptions,
    private readonly tailers: Tailers,
    private readonly known: KnownFiles,
    private readonly rotation: Rotation,
  ) {}

  /**
   * One scan; `completed` runs before its end (collecting finished files:
   * completion.ts). `betweenSlices` runs after each slice but the last: the
   * spooler reads there, so that a spool of 20,000 new files starts shipping
   * after its first slice instead of after seconds of stats.
   */
  async scan(completed: () => Promise<void>, betweenSlices?: () => Promise<unknown>): Promise<void> {
    this.known.rebuild();
    if (this.o.events.onLayout) this.o.events.onLayout(await checkLayout(this.o.router.spoolDir));
    const listed = await (this.o.listFiles ?? listFiles)(this.o.router.walkRoots());
    this.listedDirs = listed.dirs ?? [];
    this.listedDirLinks = listed.dirLinks ?? new Map();
    const unlisted = this.noteFailures(listed.failed);
    const candidates = await this.admittedOf(listed.paths, (p) => listed.links.get(p) ?? null);
    const listedNow = new Set(candidates.map((c) => c.p));
    for (const p of this.unreadable) if (!listedNow.has(p)) this.unreadable.delete(p);
    // Keys of the files found at a listed path; the inodes (dev:ino) found
    // so far, and every inode listed.
    const seen = new Set<string>();
    const claimed = new Set<string>();
    const listedInodes = new Set<string>();
    // A slice at a time: look at its paths (a stat each, and the first
    // bytes of the files not yet followed, SCAN_CONCURRENCY at a time),
    // classify every path of the slice, then apply the findings one after
    // another in path order.
    const sliceLen = this.o.scanSlice ?? SCAN_SLICE;
    this.openFds = this.tailers.openDescriptors;
    for (let from = 0; from < candidates.length; from += sliceLen) {
      const slice = candidates.slice(from, from + sliceLen);
      const ctx = this.context();
      const found = await look(ctx, slice, SCAN_CONCURRENCY);
      for (const l of found) if (l.st?.isFile()) listedInodes.add(`${l.st.dev}:${l.st.ino}`);
      for (const finding of await classifySlice(ctx, found, claimed)) {
        const key = await this.apply(finding);
        if (key) seen.add(key);
      }
      await this.told();
      if (betweenSlices && from + sliceLen < candidates.length) await betweenSlices();
    }
    for (const f of classifyUnseen(this.tailers, seen, unlisted)) {
      if (f.kind === 'renamed away') await this.rotation.detach(f.t);
      // Renamed away, still written to until its writer reopens: its size
      // and links only through the descriptor.
      else if (f.kind === 'away') await this.rotation.statDetached(f.t);
    }
    if (this.firstScan) for (const u of await classifyUnmatched(this.context(), listedInodes, statOrNull)) await this.adopt(u);
    await completed();
    this.firstScan = false;
  }

  /**
   * Paths the directory watch says were created or renamed into a listed
   * directory since the last scan: each one that is a new file is followed
   * now, as the scan would (a file the state knows, or one followed already,
   * waits for the scan). The next scan may be seconds away in a spool of
   * many files (spooler.ts SCAN_GAP_FACTOR): a file created and renamed out
   * of the patterns before it was never known, its lines lost. Only regular
   * files: a symlink, and anything else, is the scan's. `links`: of the paths
   * listed in a directory new since the scan (spooler.ts listNewDirs), those
   * reached through a symlink, with the link.
   */
  async lookAt(paths: Iterable<string>, links?: ReadonlyMap<string, string>): Promise<void> {
    if (this.firstScan) return;
    const files: string[] = [];
    for (const p of [...paths].sort()) if (this.o.router.route(p) && (await statOrNull(p, true))?.isFile()) files.push(p);
    const candidates = await this.admittedOf(files, (p) => links?.get(p) ?? this.listedDirLinks.get(path.dirname(p)) ?? null);
    if (candidates.length === 0) return;
    this.openFds = this.tailers.openDescriptors;
    const ctx = this.context();
    for (const f of await classifySlice(ctx, await look(ctx, candidates, SCAN_CONCURRENCY), new Set())) if (f.kind === 'new') await this.addNew(f);
    await this.told();
  }

  /**
   * The paths routed to a Data Source and admitted (admission.ts), in their
   * order, with those reached through a symlink (`linkOf`) last: a file
   * listed under both (current.ndjson -> 2026-11-25.ndjson) is found at its
   * own name.
   */
  private async admittedOf(paths: Iterable<string>, linkOf: (p: string) => string | null): Promise<Candidate[]> {
    const direct: Candidate[] = [];
    const links: Candidate[] = [];
    for (const p of paths) {
      const ds = this.o.router.route(p);
      if (!ds) continue;
      const link = linkOf(p);
      const file = this.o.admission ? await this.o.admission.admitted(p, link) : 'unchecked';
      if (file !== null) (link ? links : direct).push({ p, ds, file, link });
    }
    return [...direct, ...links];
  }

  private context(): ClassifyContext {
    return { tailers: this.tailers, known: this.known, store: this.o.store, firstScan: this.firstScan };
  }

  /** Apply one listed path's finding; the key of the file it was found to be, if any. */
  private async apply(f: PathFinding): Promise<string | null> {
    switch (f.kind) {
      case 'followed':
        await this.follow(f.t, f.p, f.st);
        return f.t.key;
      case 'came back':
        f.t.revive();
        await this.follow(f.t, f.p, f.st);
        return f.t.key;
      case 'resumed':
        return this.resume(f);
      case 'new':
        return await this.addNew(f);
      case 'unreadable':
        if (!this.unreadable.has(f.p)) {
          this.unreadable.add(f.p);
          this.o.events.onUnreadable?.(f.ds, f.p, f.code);
        }
        return null;
      default:
        return null;
    }
  }

  /**
   * Report directories that newly fail to list, and those that list again;
   * returns whether a path lies under one that failed this time.
   */
  private noteFailures(failed: ReadonlyArray<{ dir: string; code: string }>): (p: string) => boolean {
    const now = new Set(failed.map((f) => f.dir));
    for (const f of failed) if (!this.failing.has(f.dir)) this.o.events.onListFailed?.(f.dir, f.code);
    for (const dir of this.failing) if (!now.has(dir)) this.o.events.onListRecovered?.(dir);
    this.failing = now;
    const prefixes = [...now].map((d) => (d.endsWith(path.sep) ? d : d + path.sep));
    return (p) => prefixes.some((d) => p.startsWith(d));
  }

  /**
   * A file of the state matched by no pattern any more (classify.ts
   * classifyUnmatched): read to its end, as a running agent would have.
   * Without this a kill -9 during such a file loses its unread tail. The
   * state store has already found each file again by identity
   * (spool/relocate.ts).
   */
  private async adopt({ fp, resume, st }: Unmatched): Promise<void> {
    const m = fp.meta;
    const t = new FileTailer(m.key, m.ds, m.path, resume, m.dev, m.ino, m.gen, this.o.clock.now(), this.o.maxLineBytes, m.lettered);
    t.sawStat(st, false);
    // Opened now (ensureOpen checks device and inode): a detached file is
    // read only through the descriptor it holds. The inode alone can
    // mislead (deleted, then reused by a new file while the agent was
    // down): only a file that still starts with its fingerprint is ours.
    const fh = await t.ensureOpen();
    if (!fh) return;
    if (!(await sameContentStart(fh, st.size, m))) {
      await t.closeFd();
      return;
    }
    // Renamed out of the patterns (journaled so, or found elsewhere at start), or a config that matches it no more (kept).
    const renamed = m.away || this.o.store.renamedWhileDown(m.key);
    // Found renamed at start: journaled so, or the next start (after a stop or a
    // crash before it finished) finds it where the state says and takes it for
    // a file the config matches no more, which on_complete: delete keeps for good.
    if (renamed && !m.away) this.o.store.updateFile(atPath(m, m.path, true));
    t.detach(this.o.clock.now(), renamed ? 'renamed' : 'unmatched');
    this.tailers.add(t);
  }

  /** A followed file at a listed path: back from being renamed away, moved, truncated, replaced, or grown. */
  private async follow(t: FileTailer, p: string, st: Stats): Promise<void> {
    // Open, or its first bytes checked below: renamed back into the patterns.
    if (t.detached) t.reattach();
    if (t.path !== p) this.rotation.moved(t, p);
    const changed = st.size !== t.lastSize || st.mtimeMs !== t.lastMtimeMs;
    // A descriptor held since before pins the inode: other first bytes there
    // are a truncation written past the old offset (copytruncate), not a new file.
    const held = t.fh !== null;
    // Shorter than read, or a read found the bytes before its offset changed (truncated and written past it since).
    if (st.size < t.readOffset || t.changedUnder) this.tells.push(await this.rotation.restart(t, st.size, 'truncated'));
    else if (changed && !(await this.rotation.startsAsKnown(t, st.size))) this.tells.push(await this.rotation.restart(t, st.size, held ? 'truncated' : 'replaced'));
    else if (st.size > t.readOffset && !t.fh) await t.ensureOpen();
    t.sawStat(st);
  }

  /** A file the state knows: followed again from where it resumes. */
  private resume(f: Extract<PathFinding, { kind: 'resumed' }>): string {
    const m = f.fp.meta;
    this.noteReadable(f.p, f.ds);
    const t = new FileTailer(m.key, m.ds, f.p, f.resume, m.dev, m.ino, m.gen, this.o.clock.now(), this.o.maxLineBytes, m.lettered);
    t.sawStat(f.st, true, f.head?.mtimeMs ?? f.st.mtimeMs);
    this.tailers.add(t);
    if (m.path !== f.p || m.away) this.o.store.updateFile(atPath(m, f.p, false));
    return m.key;
  }

  /**
   * A new file (or a new generation of a known inode): tracked from 0, or
   * from its end with start_at: end in the first scan. Its descriptor is
   * taken now (within the reader's FD_BUDGET): deleted by its writer before
   * the reader comes to it (a backlog, slow answers; logrotate's rotate 0),
   * it is read through it.
   */
  private async addNew(f: Extract<PathFinding, { kind: 'new' }>): Promise<string> {
    const { p, ds, st, gen, head } = f;
    const { dev, ino, size } = st;
    this.noteReadable(p, ds);
    const key = fileKey(dev, ino, gen);
    const id = fingerprintOf(head.head);
    const start = this.firstScan && this.o.startAt === 'end' ? size : 0;
    const outside = (await this.o.admission?.linkedOutside(p, f.link ?? null)) === true;
    this.o.store.trackFile({ key, dev, ino, gen, fp: id.fp, fpLen: id.fpLen, path: p, ds, ...(outside ? { linkedOutside: true as const } : {}) }, start);
    this.known.note(key, dev, ino);
    const t = new FileTailer(key, ds, p, start, dev, ino, gen, this.o.clock.now(), this.o.maxLineBytes);
    t.sawStat(st, true, head.mtimeMs);
    this.tailers.add(t);
    if (size > start && this.openFds < FD_BUDGET && (await t.ensureOpen())) this.openFds++;
    this.tells.push(() => this.o.events.onDiscovered(ds, p));
    return key;
  }

  /**
   * The new files' state records go to disk before they are told (one
   * fsync per slice that found any): a file renamed out of the patterns
   * while the agent is down is found again by its identity only if the
   * state knows it, and with the group commit a kill -9 within ~50 ms of
   * `file_discovered` lost the whole file.
   */
  private async told(): Promise<void> {
    if (this.tells.length === 0) return;
    const tells = this.tells.splice(0);
    await this.o.persist?.();
    for (const tell of tells) tell();
  }

  private noteReadable(p: string, ds: string): void {
    if (this.unreadable.delete(p)) this.o.events.onReadable?.(ds, p);
  }
}

function statOrNull(p: string, noFollow = false): Promise<Stats | null> {
  return (noFollow ? fsp.lstat(p) : fsp.stat(p)).catch(() => null);
}
