// What the spooler and its parts (discovery.ts, rotation.ts, read-loop.ts,
// completion.ts) are given.
import type { Batcher } from '../batcher/batcher.js';
import type { StateStore } from '../state/store.js';
import type { Clock } from '../util/clock.js';
import type { Admission } from './admission.js';
import type { SpoolLayout } from './layout.js';
import type { Router } from './routes.js';
import type { listFiles } from './walk.js';

export interface SpoolerEvents {
  onDiscovered(ds: string, file: string): void;
  onTruncated(ds: string, file: string): void;
  onFinished(ds: string, file: string, deleted: boolean): void;
  /** A read round found nothing to read: every file is read to its known end. */
  onIdle?(): void;
  /** What each scan found of the spool's layout (a missing spool.dir, skipped directories). */
  onLayout?(layout: SpoolLayout): void;
  /** A directory of the spool could not be listed (once per failing streak): its files are kept as they were. */
  onListFailed?(dir: string, code: string): void;
  /** A directory that could not be listed is listed again. */
  onListRecovered?(dir: string): void;
  /** A followed file cannot be opened (EACCES, EPERM: once per streak): kept as it was, tried again at each read. */
  onUnreadable?(ds: string, file: string, code: string): void;
  /** A file reported unreadable opens again: reading goes on where it was. */
  onReadable?(ds: string, file: string): void;
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
  /** A file gone this long (spool.forget_after_ms) is forgotten; one back sooner continues where it was. */
  forgetAfterMs: number;
  maxLineBytes: number;
  rescanMs: number;
  /** Resolves when the pipeline has room for more data. */
  waitForRoom: () => Promise<void>;
  /**
   * Whether the pipeline has room now, without waiting: a read round between
   * a scan's slices stops where it would wait (read-loop.ts). Always room
   * when absent.
   */
  hasRoom?: () => boolean;
  events: SpoolerEvents;
  watch: boolean;
  /** Paths a scan looks at before reading in between (discovery.ts SCAN_SLICE when absent); tests make it small. */
  scanSlice?: number;
  /** The scan's listing of the spool (walk.ts listFiles); tests replace it to freeze a listing at a moment. */
  listFiles?: typeof listFiles;
}
