// The spool: discovery (discovery.ts, with rotation.ts) finds files and
// follows them by identity; the read loop (read-loop.ts) reads them;
// completion (completion.ts) forgets or deletes finished ones. This file
// runs them: directory watch events and a periodic rescan mark the spool
// dirty (inotify drops events under load, NFS has none); one loop scans
// when dirty and reads until there is nothing to read, then waits. A path a
// watch event says was created is looked at between scans (arrived()). All
// timing is on the injected clock.
import { lstat } from 'node:fs/promises';
import type { SeenNow, SeenStat } from '../state/store.js';
import { after, every } from '../util/clock.js';
import type { LongLived } from '../util/lifecycle.js';
import { collectFinished } from './completion.js';
import { DirWatcher } from './dir-watcher.js';
import { Discovery } from './discovery.js';
import { KnownFiles } from './known-files.js';
import type { SpoolerOptions } from './options.js';
import { ReadLoop } from './read-loop.js';
import { Rotation } from './rotation.js';
import { Tailers, type TailerView } from './tailers.js';
import { listFiles } from './walk.js';
import type { FileTailer } from './tailer.js';

export type { SpoolerEvents, SpoolerOptions } from './options.js';
export type { TailerView } from './tailers.js';

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
/** Paths of watch events kept for a look before the next scan (arrived()); past it, the scan finds them. */
const MAX_ARRIVALS = 1024;

export class Spooler implements LongLived, SeenNow {
  private readonly tailers = new Tailers();
  /** Files of the state no scan has found, and since when (completion.ts forgetUnfound). */
  private readonly unfound = new Map<string, number>();
  private readonly discovery: Discovery;
  private readonly reader: ReadLoop;
  private watcher: DirWatcher | null = null;
  private stopped = false;
  private wakeLoop: (() => void) | null = null;
  private dirty = true;
  /** Clock time before which no scan starts (see run()). */
  private nextScanAt = 0;
  private loop: Promise<void> | null = null;
  private stopRescan: (() => void) | null = null;
  /** Ends the wait for room of the read round under way once a scan may start (poke); abortRound at once (stopReading). */
  private interruptRound: (() => void) | null = null;
  private abortRound: (() => void) | null = null;
  /** stopReading(): scans only, until close(). */
  private readingStopped = false;
  /** The read round under way. */
  private reading: Promise<boolean> | null = null;
  /** Resolves once the first scan has ended, or the spooler has stopped. */
  readonly firstScanEnded: Promise<void>;
  private endFirstScan!: () => void;
  /** Clock time at the end of the last scan, and how long it took. */
  private lastScanEndAt = 0;
  private lastScanMs = 0;
  /** A scan has read between its slices and has more to look at: the files it found so far are not all there is. */
  private slicing = false;
  /** Paths created or renamed into a watched directory since the last scan's listing (discovery.ts lookAt). */
  private readonly arrivals = new Set<string>();

  constructor(private readonly o: SpoolerOptions) {
    const known = new KnownFiles(o.store);
    this.discovery = new Discovery(o, this.tailers, known, new Rotation(o, this.tailers, known));
    this.reader = new ReadLoop(o, this.tailers);
    this.firstScanEnded = new Promise((resolve) => (this.endFirstScan = resolve));
  }

  /** start_at: end in this run: the first scan takes each file's end (the agent says it started after it). */
  get startsAtEnd(): boolean {
    return this.o.startAt === 'end';
  }

  start(): void {
    this.stopRescan = every(this.o.clock, this.o.rescanMs, () => this.safetyPoke());
    // An unexpected failure is the agent's fatal error, not an unhandled rejection.
    this.loop = this.run()
      .catch((err: unknown) => {
        if (!this.o.onFatal) throw err;
        this.o.onFatal(err);
      })
      .finally(() => this.endFirstScan());
  }

  /**
   * A stop's drain begins: no more reading (the chunk under way ends), and
   * the remainders of deleted files go now; scans go on until close(), so
   * a file created during the drain (up to shutdown_timeout_ms: a SIGHUP
   * reload's too) is in the state, and found by its identity at the next
   * start however it was renamed meanwhile.
   */
  async stopReading(): Promise<void> {
    this.readingStopped = true;
    this.abortRound?.();
    while (this.reading) await this.reading;
    for (const t of this.tailers.values()) await this.sendRemainderIfDeleted(t);
  }

  /** A read round, unless reading has stopped; stopReading waits for it. */
  private async readRound(yieldWhenFull: boolean, interrupt?: AbortSignal): Promise<boolean> {
    if (this.readingStopped) return false;
    const round = this.reader.round(() => this.stopped || this.readingStopped, yieldWhenFull, interrupt);
    this.reading = round;
    try {
      return await round;
    } finally {
      this.reading = null;
    }
  }

  /** Stop reading and scanning (SIGTERM, after the drain): the loop finishes its current chunk or scan and returns; the files are closed. */
  async close(): Promise<void> {
    this.stopped = true;
    this.stopRescan?.();
    this.wakeLoop?.();
    this.watcher?.close();
    await this.loop;
    await this.reader.close();
    for (const t of this.tailers.values()) {
      // After stopReading the batcher is closed: the remainders went then.
      if (!this.readingStopped) await this.sendRemainderIfDeleted(t);
      await t.closeFd();
    }
  }

  /**
   * A deleted file read to its end but for a partial last line (read until
   * idle: its writer may still finish it) cannot be reopened after this
   * stop: the remainder goes now, whole, with the batches the stop drains.
   */
  private async sendRemainderIfDeleted(t: FileTailer): Promise<void> {
    if (!t.fh || t.finished || t.carriedBytes === 0 || t.unreadBytes > 0) return;
    const st = await t.fh.stat().catch(() => null);
    if (st?.nlink !== 0) return;
    await t.flushRemainder(this.o.batcher);
    t.finish();
  }

  /** Reading is all in this process: nothing to abandon but the current chunk. */
  destroy(): Promise<void> {
    return this.close();
  }

  /** A paused Data Source may be read again (pipeline.ts paused): a read round, no scan. */
  wake(): void {
    this.wakeLoop?.();
  }

  /** Something may have changed in the spool: scan before the next read round (one waiting for room stops waiting). */
  poke(): void {
    this.dirty = true;
    this.interruptRound?.();
    this.wakeLoop?.();
  }

  /** One scan now (tests; the loop scans by itself, reading between slices). */
  scan(betweenSlices?: () => Promise<unknown>): Promise<void> {
    return this.discovery.scan(() => collectFinished(this.o, this.tailers, this.unfound), betweenSlices);
  }

  /** How many files are followed now (tailers.ts followed(); they grow a scan slice at a time). */
  get followedCount(): number {
    return this.tailers.followedCount;
  }

  /** Tailers held, finished ones not yet forgotten included (the state's size, for the heap bound). */
  get trackedCount(): number {
    return this.tailers.size;
  }

  /** The files followed now, read-only. */
  get files(): Iterable<TailerView> {
    return this.tailers.values();
  }

  /**
   * Every file of `ds` read to its known end (the end-of-backlog rule asks);
   * never while a large scan is still finding files, or the batch open
   * while it stats its next slice would go out part full.
   */
  caughtUp(ds: string): boolean {
    return !this.slicing && this.tailers.caughtUp(ds);
  }

  /** The first scan of the spool has ended: every file there is known with its size. */
  get scannedOnce(): boolean {
    return !this.discovery.firstScan;
  }

  /** spoolship_behind_bytes per Data Source. */
  behindBytes(): Map<string, number> {
    return this.tailers.behindBytes((key) => this.o.store.committedOf(key));
  }

  /** Is the file at `path` with inode `ino` being followed (discovered, not finished)? */
  isFollowing(path: string, ino: number): boolean {
    return this.tailers.isFollowing(path, ino);
  }

  /** Where the file of this key is now, if followed. */
  pathOf(key: string): string | undefined {
    return this.tailers.get(key)?.path;
  }

  /** The last identity-checked stat of the file of this key (for the checkpoint). */
  seenOf(key: string): SeenStat | undefined {
    return this.tailers.get(key)?.seen ?? undefined;
  }

  /**
   * Watch events only mark the spool dirty. Only directories are watched
   * (dir-watcher.ts), those the last scan listed: a directory's watch
   * reports every change of the files in it (inotify), and the scan works
   * out what changed. Watching each file cost 76 MB and 0.65 s of set-up
   * with 10,000 files; directories only, 25 MB and 0.15 s. The watch starts
   * after the first scan so its set-up does not delay the first read; the
   * rescan covers the gap, and a new directory until the scan that lists it.
   */
  private watchListed(): void {
    if (!this.o.watch || this.stopped) return;
    this.watcher ??= new DirWatcher((arrived) => this.arrived(arrived));
    // A directory watched only now: what changed there since its listing is looked at once more.
    if (this.watcher.sync(this.discovery.listedDirs) > 0) this.poke();
  }

  /**
   * A watch event: the spool is dirty; a path created or renamed in is
   * looked at before the next read round, whatever the scan's pacing
   * (discovery.ts lookAt). A round waiting for room stops waiting for it:
   * with the server slow or down a new file is known, and its descriptor
   * taken, before it can be renamed away. A round reading on is not cut
   * short (its files would wait behind every event of a busy directory).
   */
  private arrived(p: string | null): void {
    if (p !== null && this.arrivals.size < MAX_ARRIVALS) {
      this.arrivals.add(p);
      if (!this.o.room.hasRoom) this.abortRound?.();
    }
    this.poke();
  }

  /**
   * Directories among `arrived` (a new Data Source directory, one moved in):
   * watched first, then listed as the scan would list them, so a file
   * created in one and renamed away before the next scan is known too; its
   * subdirectories are watched as they are found. One holding more than
   * MAX_ARRIVALS files waits for the scan.
   */
  private async listNewDirs(arrived: readonly string[]): Promise<{ paths: string[]; links: ReadonlyMap<string, string> }> {
    const paths: string[] = [];
    const links = new Map<string, string>();
    for (const dir of arrived) {
      const depth = this.watcher ? this.o.router.walkDepthBelow(dir) : 0;
      if (depth <= 0 || !(await lstat(dir).catch(() => null))?.isDirectory() || !this.watcher!.add(dir)) continue;
      const listed = await listFiles([{ dir, depth }]);
      for (const sub of listed.dirs) this.watcher!.add(sub);
      if (paths.length + listed.paths.length > MAX_ARRIVALS) continue;
      paths.push(...listed.paths);
      for (const [p, link] of listed.links) links.set(p, link);
    }
    return { paths, links };
  }

  /** The periodic rescan (see SAFETY_SCAN_FACTOR). */
  private safetyPoke(): void {
    if (this.watcher?.complete && this.o.clock.now() - this.lastScanEndAt < SAFETY_SCAN_FACTOR * this.lastScanMs) return;
    this.poke();
  }

  private async run(): Promise<void> {
    const clock = this.o.clock;
    while (!this.stopped) {
      if (this.dirty && clock.now() >= this.nextScanAt) {
        this.dirty = false;
        // The scan lists them; those that come during it are looked at after it.
        this.arrivals.clear();
        const first = this.discovery.firstScan;
        const began = clock.now();
        // Reading goes on between the scan's slices (a large spool of new
        // files); that time is not the scan's (the pacing below is).
        let reading = 0;
        try {
          await this.scan(async () => {
            this.slicing = true;
            const from = clock.now();
            await this.readRound(true);
            reading += clock.now() - from;
          });
        } finally {
          this.slicing = false;
        }
        // Scans take at most 1 / (1 + SCAN_GAP_FACTOR) of the time: with
        // 10,000 files one takes ~0.15 s, and every watch event (or the
        // rescan timer) asking for the next at once kept a core busy and
        // the heap churning. A small spool scans in a millisecond: no gap.
        this.lastScanEndAt = clock.now();
        this.lastScanMs = this.lastScanEndAt - began - reading;
        this.nextScanAt = this.lastScanEndAt + SCAN_GAP_FACTOR * this.lastScanMs;
        this.watchListed();
        if (first) this.endFirstScan();
      } else if (this.arrivals.size > 0) {
        const paths = [...this.arrivals];
        this.arrivals.clear();
        const inNew = await this.listNewDirs(paths);
        await this.discovery.lookAt([...paths, ...inNew.paths], inNew.links);
      }
      // A round waiting for room (slow answers, a backlog) stops waiting when a scan is due: a file created meanwhile is
      // discovered (known by identity, so a rename out of the patterns before any room comes back keeps its lines).
      // Not before the scan's pacing lets it start: until then the round reads on as room comes.
      const due = new AbortController();
      const armed: { cancel?: () => void } = {};
      this.interruptRound = () => void (armed.cancel ??= after(clock, this.nextScanAt - clock.now(), () => due.abort()));
      this.abortRound = () => due.abort();
      if (this.dirty) this.interruptRound();
      const progressed = await this.readRound(false, due.signal);
      armed.cancel?.();
      this.interruptRound = this.abortRound = null;
      if (!progressed && !this.stopped && this.arrivals.size === 0) {
        if (!this.readingStopped) this.o.events.onIdle?.();
        const wait = this.dirty ? this.nextScanAt - clock.now() : Infinity;
        if (wait <= 0) continue;
        // Until poked (a watch event, the rescan, stop), or the next scan may start.
        const woken = new AbortController();
        this.wakeLoop = () => woken.abort();
        if (wait === Infinity) await new Promise<void>((resolve) => woken.signal.addEventListener('abort', () => resolve(), { once: true }));
        else await clock.sleep(wait, woken.signal);
        this.wakeLoop = null;
      }
    }
  }
}
