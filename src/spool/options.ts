// What the spooler is given, and the part of it each of its parts
// (discovery.ts, rotation.ts, read-loop.ts, completion.ts) uses: each takes
// its own narrow options type below, so what a part depends on is named
// where it is declared.
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
  /** `deleted`: by on_complete: delete; `gone`: no name left when finished (deleted by the agent or by someone else). */
  onFinished(ds: string, file: string, deleted: boolean, gone: boolean): void;
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
  /** on_complete: delete could not delete a finished file (EACCES, EROFS, ...): it is kept, tried again at each scan; once per streak. */
  onDeleteFailed?(ds: string, file: string, code: string): void;
  /** The reader thread could not start or died: reads go on in the main thread (spool/scan-reader.ts). */
  onReaderThreadFailed?(err: Error): void;
  /** The reader thread has started: it takes the reads from now on (until then they are done in the main thread). */
  onReaderThreadReady?(): void;
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
  /** The pipeline's backpressure (pipeline.ts implements it). */
  room: Room;
  /** Read the spool in a thread of its own (scan-reader.ts: from READER_THREAD_MIN_THREADS compression threads). */
  readerThread?: boolean;
  events: SpoolerEvents;
  watch: boolean;
  /** Paths a scan looks at before reading in between (discovery.ts SCAN_SLICE when absent); tests make it small. */
  scanSlice?: number;
  /** The scan's listing of the spool (walk.ts listFiles); tests replace it to freeze a listing at a moment. */
  listFiles?: typeof listFiles;
  /** Make what the state holds durable now, so a file discovered is known across a kill -9; a full disk does not wait (the state fault, retried). */
  persist?: () => Promise<void>;
  /** The scan-and-read loop failed unexpectedly: the agent's fatal error (an ERROR, then exit 1). Without it, close() throws it. */
  onFatal?: (err: unknown) => void;
}

/** Backpressure: where the read loop waits for the pipeline to take more. */
export interface Room {
  /** Resolves when the pipeline has room for more data. */
  waitForRoom(signal?: AbortSignal): Promise<void>;
  /**
   * Whether the pipeline has room now, without waiting: a read round between
   * a scan's slices stops where it would wait (read-loop.ts).
   */
  readonly hasRoom: boolean;
  /** A parked Data Source whose batches already wait: its files are not read meanwhile (they are the buffer). */
  paused?(ds: string): boolean;
}

/** What a scan uses (discovery.ts). */
export type DiscoveryOptions = Pick<SpoolerOptions, 'router' | 'admission' | 'store' | 'clock' | 'startAt' | 'maxLineBytes' | 'scanSlice' | 'listFiles' | 'persist'> & {
  events: Pick<SpoolerEvents, 'onDiscovered' | 'onLayout' | 'onListFailed' | 'onListRecovered' | 'onReadable' | 'onUnreadable'>;
};

/** What following renames, truncations and departures uses (rotation.ts). */
export type RotationOptions = Pick<SpoolerOptions, 'router' | 'store' | 'clock'> & {
  events: Pick<SpoolerEvents, 'onDiscovered' | 'onTruncated'>;
};

/** What reading uses (read-loop.ts). */
export type ReadOptions = Pick<SpoolerOptions, 'batcher' | 'clock' | 'idleMs' | 'forgetAfterMs' | 'room' | 'readerThread' | 'onComplete'> & {
  events: Pick<SpoolerEvents, 'onFinished' | 'onReadable' | 'onUnreadable' | 'onReaderThreadFailed' | 'onReaderThreadReady'>;
};

/** What forgetting and deleting finished files uses (completion.ts). */
export type CompletionOptions = Pick<SpoolerOptions, 'store' | 'clock' | 'idleMs' | 'forgetAfterMs' | 'onComplete'> & {
  events: Pick<SpoolerEvents, 'onFinished' | 'onDeleteFailed'>;
};
