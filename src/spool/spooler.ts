// Longer than ~250 lines: not yet split into discovery, rotation, the read
// loop and completion (restructure issue, item 5); docs/architecture.md.
//
// Discovery and the read loop. chokidar events only mark paths dirty; a
// periodic rescan is the source of truth (inotify drops events under load,
// NFS has none). One loop reads one chunk at a time from files with unread
// bytes and waits whenever the pipeline says it is full (backpressure), so
// memory never grows with the backlog.
//
// Rotation, by identity (device + inode + fingerprint):
// - same identity at a new matching path: renamed, keeps its progress;
// - identity no longer at any matching path: detached, read to the end, then
//   finished (partial remainder sent as a whole line);
// - same inode, size below our offset or different first bytes: truncated
//   (copytruncate) or inode reuse: a new generation, read from 0.
import { promises as fsp, type Stats } from 'node:fs';
import path from 'node:path';
import type { FSWatcher } from 'chokidar';
import type { Batcher } from '../batcher/batcher.js';
import { sameAsSeen, type StateStore } from '../state/store.js';
import type { Clock } from '../util/clock.js';
import { mapLimit } from '../util/concurrency.js';
import { fileKey, fingerprint, fingerprintOf, headMatches, readHead, sameContentStart, FINGERPRINT_BYTES, type FileHead } from './identity.js';
import type { Router } from './routes.js';
import { FileTailer } from './tailer.js';
import { findByInode, listFiles } from './walk.js';
import type { Admission } from './admission.js';
import { checkLayout, type SpoolLayout } from './layout.js';
import { openRegular } from './open.js';

export const READ_BUFFER_BYTES = 1024 * 1024;
/**
 * Open descriptors kept for files read to their end. Beyond it a file is
 * closed at its end and reopened when it grows: 10,000 files must not mean
 * 10,000 descriptors. Below it, descriptors stay open so a rename out of the
 * patterns is followed through the open file.
 */
export const FD_BUDGET = 1000;
/**
 * File-system calls a scan keeps going at once. One after another, a scan of
 * 10,000 files spent most of its seconds waiting for round trips to the
 * threadpool; the read loop waits for the scan.
 */
const SCAN_CONCURRENCY = 32;
/** After a scan that took t, the next one waits SCAN_GAP_FACTOR x t (see run()). */
const SCAN_GAP_FACTOR = 4;
/**
 * While the directory watch runs, the periodic rescan is only the safety net
 * for events the kernel dropped (the watch reports every change of a file in
 * a watched directory): it comes every rescanMs, or every this many scan
 * durations when that is longer, so it takes at most ~1 % of the time. With
 * 20,000 files a scan takes ~0.3 s (a stat per file, on the threadpool), and
 * one every second kept a quarter of a core busy with nothing new (bench
 * "Many files"): now one every ~30 s, as often as Fluent Bit's default
 * refresh. Small spools (a scan of milliseconds) keep rescanMs.
 */
const SAFETY_SCAN_FACTOR = 100;

export interface SpoolerEvents {
  onDiscovered(ds: string, file: string): void;
  onTruncated(ds: string, file: string): void;
  onFinished(ds: string, file: string, deleted: boolean): void;
  /** A read round found nothing to read: every file is read to its known end. */
  onIdle?(): void;
  /** What each scan found of the spool's layout (a missing spool.dir, skipped directories). */
  onLayout?(layout: SpoolLayout): void;
}

export interface SpoolerOptions {
  router: Router;
  /** spool.exclude and spool.follow_symlinks (all paths admitted when absent). */
  admission?: Admission;
  store: StateStore;
  batcher: Batcher;
  clock: Clock;
  startAt: 'beginning' | 'end';
  onComplete: 'keep' | 'delete';
  idleMs: number;
  maxLineBytes: number;
  rescanMs: number;
  /** Resolves when the pipeline has room for more data. */
  waitForRoom: () => Promise<void>;
  events: SpoolerEvents;
  watch: boolean;
}

export class Spooler {
  readonly tailers = new Map<string, FileTailer>();
  /** dev:ino -> the newest tailer of that inode (a rescan looks every path up here). */
  private readonly byInode = new Map<string, FileTailer>();
  /** dev:ino -> known files from the state store, rebuilt per scan (addFile looks up here). */
  private known = new Map<string, Array<{ key: string }>>();
  private readonly buf = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  private watcher: FSWatcher | null = null;
  private stopped = false;
  private wakeLoop: (() => void) | null = null;
  private dirty = true;
  private firstScan = true;
  /** performance.now() before which no scan starts (see run()). */
  private nextScanAt = 0;
  private loop: Promise<void> | null = null;
  private scanTimer: NodeJS.Timeout | null = null;
  /** performance.now() at the end of the last scan, and how long it took. */
  private lastScanEndAt = 0;
  private lastScanMs = 0;

  constructor(private readonly o: SpoolerOptions) {}

  start(): void {
    this.scanTimer = setInterval(() => this.safetyPoke(), this.o.rescanMs);
    this.loop = this.run();
  }

  /**
   * Watch events only mark the spool dirty. Only directories are watched: a
   * directory's watch reports every change of the files in it (inotify), and
   * the scan works out what changed. Watching each file cost 76 MB and 0.65 s
   * of set-up with 10,000 files; directories only, 25 MB and 0.15 s. The
   * watcher starts after the first scan so its set-up does not delay the
   * first read; the rescan covers the gap.
   */
  private async startWatching(): Promise<void> {
    if (!this.o.watch || this.watcher || this.stopped) return;
    const { default: chokidar } = await import('chokidar'); // loaded once the first scan is done
    if (this.watcher || this.stopped) return;
    const roots = [...new Set(this.o.router.walkRoots().map((r) => r.dir))];
    this.watcher = chokidar.watch(roots, { ignoreInitial: true, depth: 2, persistent: true, ignored: (_p, st) => st?.isFile() ?? false });
    const poke = () => this.poke();
    this.watcher.on('raw', poke).on('addDir', poke).on('unlinkDir', poke).on('error', () => undefined);
  }

  poke(): void {
    this.dirty = true;
    this.wakeLoop?.();
  }

  /** The periodic rescan (see SAFETY_SCAN_FACTOR). */
  private safetyPoke(): void {
    if (this.watcher && performance.now() - this.lastScanEndAt < SAFETY_SCAN_FACTOR * this.lastScanMs) return;
    this.poke();
  }

  /** Stop reading (SIGTERM): the loop finishes its current chunk and returns. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.scanTimer) clearInterval(this.scanTimer);
    this.wakeLoop?.();
    await this.watcher?.close();
    await this.loop;
    for (const t of this.tailers.values()) await t.closeFd();
  }

  /** Every file of `ds` read to its known end (the batcher's end-of-backlog flush asks). */
  caughtUp(ds: string): boolean {
    for (const t of this.tailers.values()) {
      if (t.ds === ds && !t.finished && (t.detached || t.lastSize > t.readOffset)) return false;
    }
    return true;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      if (this.dirty && performance.now() >= this.nextScanAt) {
        this.dirty = false;
        const first = this.firstScan;
        const began = performance.now();
        await this.scan();
        // Scans take at most 1 / (1 + SCAN_GAP_FACTOR) of the time: with
        // 10,000 files one takes ~0.15 s, and every watch event (or the
        // rescan timer) asking for the next at once kept a core busy and
        // the heap churning. A small spool scans in a millisecond: no gap.
        this.lastScanEndAt = performance.now();
        this.lastScanMs = this.lastScanEndAt - began;
        this.nextScanAt = this.lastScanEndAt + SCAN_GAP_FACTOR * this.lastScanMs;
        if (first) void this.startWatching().catch(() => undefined);
      }
      const progressed = await this.readRound();
      if (!progressed && !this.stopped) {
        this.o.events.onIdle?.();
        const wait = this.dirty ? this.nextScanAt - performance.now() : Infinity;
        if (wait <= 0) continue;
        let timer: NodeJS.Timeout | null = null;
        await new Promise<void>((resolve) => {
          this.wakeLoop = resolve;
          if (wait !== Infinity) timer = setTimeout(resolve, wait);
        });
        if (timer) clearTimeout(timer);
        this.wakeLoop = null;
      }
    }
  }

  /** Read one chunk from every file with unread bytes; true when anything was read. */
  private async readRound(): Promise<boolean> {
    let any = false;
    let openFds = 0;
    for (const t of this.tailers.values()) if (t.fh) openFds++;
    for (const t of [...this.tailers.values()]) {
      if (this.stopped) return any;
      if (t.finished) continue;
      // Nothing new since the last look (the rescan and watch events update
      // lastSize): no read, no descriptor. Detached files are always drained.
      if (!t.detached && t.lastSize <= t.readOffset) {
        // Over the descriptor budget, or idle for idle_ms: give it back.
        if (t.fh && !t.pinned && (openFds > FD_BUDGET || this.o.clock.now() - t.lastGrowthAt >= this.o.idleMs)) {
          await t.closeFd();
          openFds--;
        }
        continue;
      }
      await this.o.waitForRoom();
      if (this.stopped) return any;
      const hadFd = t.fh !== null;
      const n = await t.readOnce(this.buf, this.o.batcher);
      if (!hadFd && t.fh) openFds++;
      if (n > 0) {
        any = true;
        t.lastGrowthAt = this.o.clock.now();
        if (t.readOffset > t.lastSize) t.lastSize = t.readOffset;
        // Read to its known end while over the budget: close it now, not a round later.
        if (t.readOffset >= t.lastSize && openFds > FD_BUDGET && !t.detached && !t.pinned) {
          await t.closeFd();
          openFds--;
        }
      } else {
        if (t.readOffset > t.lastSize) t.lastSize = t.readOffset;
        if (t.lastSize > t.readOffset) t.lastSize = t.readOffset; // shrank under us: the rescan decides (truncation)
        await this.maybeFinish(t);
      }
    }
    return any;
  }

  private async maybeFinish(t: FileTailer): Promise<void> {
    const now = this.o.clock.now();
    if (t.detached) {
      // Drained after leaving the patterns: the writer has moved on.
      await t.flushRemainder(this.o.batcher);
      t.finished = true;
      await t.closeFd();
      this.o.events.onFinished(t.ds, t.path, false);
      return;
    }
    if (now - t.lastGrowthAt >= this.o.idleMs && t.fh && !t.pinned) {
      // Idle: give the descriptor back; the rescan reopens the file when it grows.
      await t.closeFd();
    }
  }

  async scan(): Promise<void> {
    this.indexKnown();
    if (this.o.events.onLayout) this.o.events.onLayout(await checkLayout(this.o.router.spoolDir));
    const seen = new Set<string>();
    const candidates: Array<{ p: string; ds: string }> = [];
    const listed = await this.listCandidates();
    for (const p of listed.paths) {
      const ds = this.o.router.route(p);
      if (ds && (!this.o.admission || (await this.o.admission.admit(p, listed.links.get(p) ?? null)))) candidates.push({ p, ds });
    }
    // Stat every path, then read the first bytes of the files not yet
    // tracked, SCAN_CONCURRENCY at a time; the decisions below stay in path
    // order, one file after another.
    const stats = await mapLimit(candidates, SCAN_CONCURRENCY, ({ p }) => fsp.stat(p).catch(() => null));
    const heads = await mapLimit(candidates, SCAN_CONCURRENCY, async ({ p }, i) => {
      const st = stats[i];
      if (!st?.isFile() || this.findTailer(st.dev, st.ino) || this.verifiedAtStart(p, st)) return null;
      return readHead(p, st.dev, st.ino);
    });
    for (let i = 0; i < candidates.length; i++) {
      const st = stats[i];
      if (!st?.isFile()) continue;
      const key = await this.track(candidates[i]!.p, candidates[i]!.ds, st, heads[i] ?? null);
      if (key) seen.add(key);
    }
    for (const t of this.tailers.values()) {
      if (!seen.has(t.key) && !t.detached && !t.finished) await this.detach(t);
    }
    if (this.firstScan) await this.adoptUnmatched();
    await this.collectFinished();
    this.firstScan = false;
  }

  private async detach(t: FileTailer): Promise<void> {
    // Renamed out of the patterns, or deleted. An open descriptor still reads
    // it to the end; without one, look for the inode in the same directory.
    let found = await findByInode(path.dirname(t.path), t.dev, t.ino);
    // The inode alone can mislead: deleted, then a new file created at once
    // may reuse it. Only a file that still starts with our fingerprint is
    // ours; a new one is left to the scan, which reads it from 0.
    // (An open descriptor keeps its inode from being reused: deleted while
    // open, the file is still drained through it.)
    if (found && !(await this.startsWithFingerprint(found, t.key))) found = null;
    if (found && found !== t.path) {
      const stillMatched = this.o.router.route(found) === t.ds;
      t.path = found;
      // Journal the new path: after a kill -9 recovery re-forms this file's
      // unacknowledged batches and resumes it by path.
      const meta = this.o.store.progress.files.get(t.key)?.meta;
      if (meta) this.o.store.updateFile({ ...meta, path: found });
      // Renamed within the patterns between the scan's listing and its
      // stat: a rotation, not a departure. Detached, it would be finished at
      // its end and found again by the next scan as a new file (read twice).
      if (stillMatched) return;
    }
    if (found && !t.fh) await t.ensureOpen();
    t.detached = true;
  }

  /**
   * Files known from before the restart that no pattern matches any more
   * (renamed out of the patterns while being read, or while the agent was
   * down): read them to the end, as a running agent would have. Without this
   * a kill -9 during such a file loses its unread tail. The state store has
   * already found each file again by identity (StateStore.relocateFiles).
   */
  private async adoptUnmatched(): Promise<void> {
    const store = this.o.store;
    for (const fp of store.progress.files.values()) {
      const m = fp.meta;
      if (this.tailers.has(m.key) || this.findTailer(m.dev, m.ino)) continue;
      const st = await fsp.stat(m.path).catch(() => null);
      if (!st || !st.isFile() || st.dev !== m.dev || st.ino !== m.ino) continue;
      const resume = store.recovery.resumeAt.get(m.key) ?? fp.committed;
      if (st.size < resume) continue;
      const t = new FileTailer(m.key, m.ds, m.path, resume, m.dev, m.ino, m.gen, this.o.clock.now(), this.o.maxLineBytes);
      t.lastSize = st.size;
      t.lastMtimeMs = st.mtimeMs;
      // Opened now (ensureOpen checks device and inode): a detached file is
      // read only through the descriptor it holds.
      if (!(await t.ensureOpen())) continue;
      t.detached = true;
      this.addTailer(t);
    }
  }

  private async track(p: string, ds: string, st: Stats, head: FileHead | null): Promise<string | null> {
    let existing = this.findTailer(st.dev, st.ino);
    if (existing?.finished) {
      // A finished file's descriptor is closed, so its inode can be reused:
      // the file now here is a new one (inode reuse after delete). Read it
      // from 0 as a new generation; if it was the old one renamed back, that
      // re-sends it (duplicates), which beats losing a new file.
      return this.addFile(p, ds, st, head, existing.gen + 1);
    }
    if (existing?.detached) {
      // Still open, so the inode cannot have been reused: renamed back into the patterns.
      existing.detached = false;
    }
    if (existing) {
      if (existing.path !== p) {
        existing.path = p;
        const meta = this.o.store.progress.files.get(existing.key)?.meta;
        if (meta) this.o.store.updateFile({ ...meta, path: p });
      }
      const changed = st.size !== existing.lastSize || st.mtimeMs !== existing.lastMtimeMs;
      existing.lastMtimeMs = st.mtimeMs;
      if (st.size < existing.readOffset) await this.restartFile(existing, st.size, 'truncated');
      else if (changed && !(await this.startsAsKnown(existing, st.size))) await this.restartFile(existing, st.size, 'replaced');
      else if (st.size > existing.readOffset && !existing.fh) await existing.ensureOpen();
      existing.lastSize = st.size;
      existing.seen = [st.size, st.mtimeMs, st.ctimeMs];
      return existing.key;
    }
    return this.addFile(p, ds, st, head);
  }

  /**
   * A known file that start-up already found again by identity (fingerprint
   * read then), at this path and with the same size and times: no need to
   * read its first bytes again. Only in the first scan, moments later.
   */
  private verifiedAtStart(p: string, st: Stats): string | null {
    if (!this.firstScan) return null;
    for (const fp of this.knownFiles(st.dev, st.ino)) {
      if (fp.meta.path === p && sameAsSeen(this.o.store.seenAtStart(fp.meta.key), st)) return fp.meta.key;
    }
    return null;
  }

  private async addFile(p: string, ds: string, st: Stats, head: FileHead | null, minGen = 0): Promise<string | null> {
    const { dev, ino, size } = st;
    const store = this.o.store;
    const verifiedKey = minGen === 0 ? this.verifiedAtStart(p, st) : null;
    if (!verifiedKey) head ??= await readHead(p, dev, ino);
    if (!verifiedKey && !head) return null;
    // Known from a previous run (or earlier in this one)?
    for (const fp of this.knownFiles(dev, ino)) {
      const m = fp.meta;
      // A finished file's inode seen again: a new file, never the old progress.
      if (m.gen < minGen) continue;
      if (verifiedKey ? m.key === verifiedKey : headMatches(head!.head, size, m)) {
        const resume = store.recovery.resumeAt.get(m.key) ?? fp.committed;
        if (size < resume) break; // truncated while we were down: a new generation below
        const t = new FileTailer(m.key, m.ds, p, resume, dev, ino, m.gen, this.o.clock.now(), this.o.maxLineBytes);
        t.lastSize = size;
        t.lastMtimeMs = head?.mtimeMs ?? st.mtimeMs;
        t.seen = [st.size, st.mtimeMs, st.ctimeMs];
        this.addTailer(t);
        if (m.path !== p) store.updateFile({ ...m, path: p });
        return m.key;
      }
    }
    head ??= await readHead(p, dev, ino);
    if (!head) return null;
    let gen = minGen;
    for (const fp of this.knownFiles(dev, ino)) gen = Math.max(gen, fp.meta.gen + 1);
    const key = fileKey(dev, ino, gen);
    const f = fingerprintOf(head.head);
    const start = this.firstScan && this.o.startAt === 'end' ? size : 0;
    store.trackFile({ key, dev, ino, gen, fp: f.fp, fpLen: f.fpLen, path: p, ds }, start);
    this.noteKnown(key, dev, ino);
    const t = new FileTailer(key, ds, p, start, dev, ino, gen, this.o.clock.now(), this.o.maxLineBytes);
    t.lastSize = size;
    t.lastMtimeMs = head.mtimeMs;
    t.seen = [st.size, st.mtimeMs, st.ctimeMs];
    this.addTailer(t);
    this.o.events.onDiscovered(ds, p);
    return key;
  }

  private async restartFile(t: FileTailer, size: number, why: 'truncated' | 'replaced'): Promise<void> {
    // copytruncate: lines written after our last read and before the
    // truncation are gone. Inode reuse (delete, then create): a new file
    // under an old inode. Either way: start again at 0 as a new generation,
    // so ranges of the old content are never confused with the new.
    const gen = t.gen + 1;
    const key = fileKey(t.dev, t.ino, gen);
    this.removeTailer(t);
    const fh = await t.ensureOpen();
    const f = fh ? await fingerprint(fh, size) : { fp: '', fpLen: 0 };
    this.o.store.trackFile({ key, dev: t.dev, ino: t.ino, gen, fp: f.fp, fpLen: f.fpLen, path: t.path, ds: t.ds }, 0);
    this.noteKnown(key, t.dev, t.ino);
    t.resetTo(0, key, gen);
    this.addTailer(t);
    if (why === 'truncated') this.o.events.onTruncated(t.ds, t.path);
    else this.o.events.onDiscovered(t.ds, t.path);
  }

  /**
   * Does the file still start with the bytes we fingerprinted? While the
   * fingerprint covers fewer than FINGERPRINT_BYTES it is extended as the
   * file grows.
   */
  private async startsAsKnown(t: FileTailer, size: number): Promise<boolean> {
    const fp = this.o.store.progress.files.get(t.key);
    if (!fp) return true;
    const fh = await t.ensureOpen();
    if (!fh) return true;
    if (!(await sameContentStart(fh, size, fp.meta))) return false;
    if (fp.meta.fpLen < FINGERPRINT_BYTES && size > fp.meta.fpLen) {
      const f = await fingerprint(fh, size);
      this.o.store.updateFile({ ...fp.meta, fp: f.fp, fpLen: f.fpLen });
    }
    return true;
  }

  private async startsWithFingerprint(p: string, key: string): Promise<boolean> {
    const meta = this.o.store.progress.files.get(key)?.meta;
    if (!meta) return false;
    const opened = await openRegular(p);
    if (!opened) return false;
    const { fh, st } = opened;
    try {
      return await sameContentStart(fh, st.size, meta);
    } finally {
      await fh.close();
    }
  }

  private findTailer(dev: number, ino: number): FileTailer | undefined {
    return this.byInode.get(`${dev}:${ino}`);
  }

  private addTailer(t: FileTailer): void {
    this.tailers.set(t.key, t);
    const id = `${t.dev}:${t.ino}`;
    const cur = this.byInode.get(id);
    if (!cur || cur === t || cur.gen <= t.gen) this.byInode.set(id, t);
  }

  private removeTailer(t: FileTailer): void {
    this.tailers.delete(t.key);
    const id = `${t.dev}:${t.ino}`;
    if (this.byInode.get(id) === t) this.byInode.delete(id);
  }

  /** Known files of this inode (all generations). */
  private knownFiles(dev: number, ino: number) {
    const out = [];
    for (const { key } of this.known.get(`${dev}:${ino}`) ?? []) {
      const fp = this.o.store.progress.files.get(key);
      if (fp) out.push(fp);
    }
    return out;
  }

  private indexKnown(): void {
    this.known = new Map();
    for (const [key, fp] of this.o.store.progress.files) this.noteKnown(key, fp.meta.dev, fp.meta.ino);
  }

  private noteKnown(key: string, dev: number, ino: number): void {
    const id = `${dev}:${ino}`;
    let list = this.known.get(id);
    if (!list) this.known.set(id, (list = []));
    list.push({ key });
  }

  /** Forget finished files once committed; delete them when on_complete says so. */
  private async collectFinished(): Promise<void> {
    const store = this.o.store;
    for (const t of [...this.tailers.values()]) {
      const fp = store.progress.files.get(t.key);
      const fullyCommitted = fp !== undefined && fp.entries.length === 0 && fp.committed >= t.readOffset && t.carriedBytes === 0;
      if (t.finished && fullyCommitted) {
        this.removeTailer(t);
        store.forgetFile(t.key);
        continue;
      }
      if (this.o.onComplete === 'delete' && !t.finished && fullyCommitted && this.superseded(t)) {
        const idle = this.o.clock.now() - t.lastGrowthAt >= this.o.idleMs;
        if (!idle) continue;
        await fsp.rm(t.path, { force: true });
        await t.closeFd();
        t.finished = true;
        this.o.events.onFinished(t.ds, t.path, true);
      }
    }
  }

  /** Renamed out of the patterns, or a newer file exists in the same directory. */
  private superseded(t: FileTailer): boolean {
    if (t.detached) return true;
    const dir = path.dirname(t.path);
    for (const other of this.tailers.values()) {
      if (other !== t && !other.finished && path.dirname(other.path) === dir && other.lastGrowthAt > t.lastGrowthAt) return true;
    }
    return false;
  }

  private listCandidates(): Promise<{ paths: string[]; links: Map<string, string> }> {
    return listFiles(this.o.router.walkRoots());
  }
}
