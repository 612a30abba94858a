// A scan: list spool.dir and spool.sources (walk.ts, routes.ts), admit each
// path (admission.ts), stat it, and match it to the file it is by identity:
// a file followed already (its size and times updated, a rename followed, a
// truncation or a replaced file restarted: rotation.ts), a file the state
// knows from before (resumed where it was committed), or a new file (read
// from 0, or from its end with start_at: end in the first scan). Followed
// files no scan finds any more are detached (rotation.ts) and read through
// their descriptors until idle (read-loop.ts). A directory whose listing
// failed (EMFILE, EIO, ESTALE) changes nothing: its files are not gone.
import { promises as fsp, type Stats } from 'node:fs';
import path from 'node:path';
import { sameAsSeen } from '../state/store.js';
import { mapLimit } from '../util/concurrency.js';
import { fileKey, fingerprintOf, headMatches, readHead, sameContentStart, type FileHead } from './identity.js';
import type { KnownFiles } from './known-files.js';
import { checkLayout } from './layout.js';
import type { SpoolerOptions } from './options.js';
import type { Rotation } from './rotation.js';
import { openRegularOrRefused } from './open.js';
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
  /** Directories whose last listing failed (reported once per streak). */
  private failing = new Set<string>();
  /**
   * Paths not yet followed whose first bytes could not be read for their
   * permissions (reported once per streak; followed files: tailer.ts).
   * Pruned to the paths each scan lists, so bounded by the spool.
   */
  private unreadable = new Set<string>();

  constructor(
    private readonly o: SpoolerOptions,
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
    const seen = new Set<string>();
    const candidates: Array<{ p: string; ds: string }> = [];
    const listed = await (this.o.listFiles ?? listFiles)(this.o.router.walkRoots());
    const unlisted = this.noteFailures(listed.failed);
    const links: Array<{ p: string; ds: string }> = [];
    for (const p of listed.paths) {
      const ds = this.o.router.route(p);
      const link = listed.links.get(p) ?? null;
      if (ds && (!this.o.admission || (await this.o.admission.admit(p, link)))) (link ? links : candidates).push({ p, ds });
    }
    // Paths through a symlink after the others: a file listed under both
    // (current.ndjson -> 2026-11-25.ndjson) is found at its own name.
    candidates.push(...links);
    const listedNow = new Set(candidates.map((c) => c.p));
    for (const p of this.unreadable) if (!listedNow.has(p)) this.unreadable.delete(p);
    // A slice at a time: stat its paths, then read the first bytes of the
    // files not yet tracked, SCAN_CONCURRENCY at a time; the decisions stay
    // in path order, one file after another.
    const sliceLen = this.o.scanSlice ?? SCAN_SLICE;
    for (let from = 0; from < candidates.length; from += sliceLen) {
      const slice = candidates.slice(from, from + sliceLen);
      const stats = await mapLimit(slice, SCAN_CONCURRENCY, ({ p }) => fsp.stat(p).catch(() => null));
      const heads = await mapLimit(slice, SCAN_CONCURRENCY, async ({ p }, i) => {
        const st = stats[i];
        const known = st?.isFile() ? this.tailers.ofInode(st.dev, st.ino) : undefined;
        if (!st?.isFile() || (known && !known.finished) || this.verifiedAtStart(p, st)) return null;
        return readHead(p, st.dev, st.ino);
      });
      for (let i = 0; i < slice.length; i++) {
        const st = stats[i];
        if (!st?.isFile()) continue;
        // Another name of a file this scan has already found under a name
        // before it: the file stays at that one (moving it to each name in
        // turn journaled two path changes per scan).
        const found = this.tailers.ofInode(st.dev, st.ino);
        if (found && seen.has(found.key) && found.path !== slice[i]!.p) continue;
        const key = await this.track(slice[i]!.p, slice[i]!.ds, st, heads[i] ?? null);
        if (key) seen.add(key);
      }
      if (betweenSlices && from + sliceLen < candidates.length) await betweenSlices();
    }
    for (const t of this.tailers.list()) {
      if (t.finished || seen.has(t.key)) continue;
      // Under a directory this scan could not list: not seen is not gone.
      if (!t.detached && unlisted(t.path)) continue;
      if (!t.detached) await this.rotation.detach(t);
      // Renamed away, still written to until its writer reopens: its size
      // and links only through the descriptor.
      else await this.rotation.statDetached(t);
    }
    if (this.firstScan) await this.adoptUnmatched();
    await completed();
    this.firstScan = false;
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
   * Files known from before the restart that no pattern matches any more
   * (renamed out of the patterns while being read, or while the agent was
   * down): read them to the end, as a running agent would have. Without this
   * a kill -9 during such a file loses its unread tail. The state store has
   * already found each file again by identity (spool/relocate.ts).
   */
  private async adoptUnmatched(): Promise<void> {
    const store = this.o.store;
    for (const fp of store.files()) {
      const m = fp.meta;
      if (this.tailers.has(m.key) || this.tailers.ofInode(m.dev, m.ino)) continue;
      const st = await fsp.stat(m.path).catch(() => null);
      if (!st || !st.isFile() || st.dev !== m.dev || st.ino !== m.ino) continue;
      const resume = store.recovery.resumeAt.get(m.key) ?? fp.committed;
      if (st.size < resume) continue;
      const t = new FileTailer(m.key, m.ds, m.path, resume, m.dev, m.ino, m.gen, this.o.clock.now(), this.o.maxLineBytes);
      t.sawStat(st, false);
      // Opened now (ensureOpen checks device and inode): a detached file is
      // read only through the descriptor it holds. The inode alone can
      // mislead (deleted, then reused by a new file while the agent was
      // down): only a file that still starts with its fingerprint is ours.
      const fh = await t.ensureOpen();
      if (!fh) continue;
      if (!(await sameContentStart(fh, st.size, m))) {
        await t.closeFd();
        continue;
      }
      t.detach(this.o.clock.now());
      this.tailers.add(t);
    }
  }

  private async track(p: string, ds: string, st: Stats, head: FileHead | null): Promise<string | null> {
    const existing = this.tailers.ofInode(st.dev, st.ino);
    if (existing?.finished) {
      // A finished file's descriptor is closed, so its inode can be reused.
      // The same first bytes and no less than was read: the file renamed
      // back within forget_after_ms, which reads on where it was (read from
      // 0 it was shipped twice). Otherwise a new file under the reused
      // inode: a new generation from 0.
      if (!this.cameBack(existing, st, head)) return this.addFile(p, ds, st, head, existing.gen + 1);
      existing.revive();
    }
    if (!existing) return this.addFile(p, ds, st, head);
    // Open, or its first bytes checked below: renamed back into the patterns.
    if (existing.detached) existing.reattach();
    if (existing.path !== p) this.rotation.moved(existing, p);
    const changed = st.size !== existing.lastSize || st.mtimeMs !== existing.lastMtimeMs;
    if (st.size < existing.readOffset) await this.rotation.restart(existing, st.size, 'truncated');
    else if (changed && !(await this.rotation.startsAsKnown(existing, st.size))) await this.rotation.restart(existing, st.size, 'replaced');
    else if (st.size > existing.readOffset && !existing.fh) await existing.ensureOpen();
    existing.sawStat(st);
    return existing.key;
  }

  /**
   * Its first bytes could not be read: when that is its permissions (chmod
   * 000 before we first saw it, or while the agent was down), say so once;
   * it is tried again at each scan and, known from before, resumes where it
   * was committed (a file gone for forget_after_ms is forgotten).
   */
  private async noteUnreadable(p: string, ds: string): Promise<null> {
    const opened = await openRegularOrRefused(p);
    if (opened && 'fh' in opened) await opened.fh.close().catch(() => undefined);
    if (opened && 'refused' in opened && !this.unreadable.has(p)) {
      this.unreadable.add(p);
      this.o.events.onUnreadable?.(ds, p, opened.refused);
    }
    return null;
  }

  private noteReadable(p: string, ds: string): void {
    if (this.unreadable.delete(p)) this.o.events.onReadable?.(ds, p);
  }

  /** A finished file found at a matching path again: the same file (not deleted, same first bytes, not shorter)? */
  private cameBack(t: FileTailer, st: Stats, head: FileHead | null): boolean {
    const meta = this.o.store.metaOf(t.key);
    return !t.deleted && head !== null && meta !== undefined && st.size >= t.readOffset && headMatches(head.head, st.size, meta);
  }

  /**
   * A known file that start-up already found again by identity (fingerprint
   * read then), at this path and with the same size and times: no need to
   * read its first bytes again. Only in the first scan, moments later.
   */
  private verifiedAtStart(p: string, st: Stats): string | null {
    if (!this.firstScan) return null;
    for (const fp of this.known.of(st.dev, st.ino)) {
      if (fp.meta.path === p && sameAsSeen(this.o.store.seenAtStart(fp.meta.key), st)) return fp.meta.key;
    }
    return null;
  }

  private async addFile(p: string, ds: string, st: Stats, head: FileHead | null, minGen = 0): Promise<string | null> {
    const { dev, ino, size } = st;
    const store = this.o.store;
    const verifiedKey = minGen === 0 ? this.verifiedAtStart(p, st) : null;
    if (!verifiedKey) head ??= await readHead(p, dev, ino);
    if (!verifiedKey && !head) return this.noteUnreadable(p, ds);
    this.noteReadable(p, ds);
    // Known from a previous run (or earlier in this one)?
    for (const fp of this.known.of(dev, ino)) {
      const m = fp.meta;
      // A finished file's inode seen again: a new file, never the old progress.
      if (m.gen < minGen) continue;
      if (verifiedKey ? m.key === verifiedKey : headMatches(head!.head, size, m)) {
        const resume = store.recovery.resumeAt.get(m.key) ?? fp.committed;
        if (size < resume) break; // truncated while we were down: a new generation below
        const t = new FileTailer(m.key, m.ds, p, resume, dev, ino, m.gen, this.o.clock.now(), this.o.maxLineBytes);
        t.sawStat(st, true, head?.mtimeMs ?? st.mtimeMs);
        this.tailers.add(t);
        if (m.path !== p) store.updateFile({ ...m, path: p });
        return m.key;
      }
    }
    head ??= await readHead(p, dev, ino);
    if (!head) return null;
    let gen = minGen;
    for (const fp of this.known.of(dev, ino)) gen = Math.max(gen, fp.meta.gen + 1);
    const key = fileKey(dev, ino, gen);
    const f = fingerprintOf(head.head);
    const start = this.firstScan && this.o.startAt === 'end' ? size : 0;
    store.trackFile({ key, dev, ino, gen, fp: f.fp, fpLen: f.fpLen, path: p, ds }, start);
    this.known.note(key, dev, ino);
    const t = new FileTailer(key, ds, p, start, dev, ino, gen, this.o.clock.now(), this.o.maxLineBytes);
    t.sawStat(st, true, head.mtimeMs);
    this.tailers.add(t);
    this.o.events.onDiscovered(ds, p);
    return key;
  }
}
