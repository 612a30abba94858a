// Longer than ~250 lines: the path of one batch from closed to done is one sequence of
// awaits; its deferral and dead-letter branches share its bookkeeping (held-bodies.ts).
//
// From a closed batch to a done batch: record the intent durably and
// compress (in parallel: compression runs on the threadpool), deliver, then
// complete it in the journal so the committed offsets move.
//
// Bounded: at most `maxInFlight + PIPELINE_SLACK` batches are between close and
// done, and at most PIPELINE_SLACK compressed bodies wait for room under
// max_in_flight_bytes; `waitForRoom` makes the reader wait beyond (backpressure).
import type { Batcher, ClosedBatch } from '../batcher/batcher.js';
import type { SendSlots } from '../batcher/linger.js';
import type { DeadLetterPath } from '../control/queue-ops.js';
import type { Codec } from '../codec/index.js';
import type { DeadLetterInput, DeadLetterReason, DeadLetterStore } from '../deadletter/store.js';
import { deadLetterInputs, type LinePieces } from '../deadletter/from-batch.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import type { RangeEntry } from '../state/progress.js';
import type { StateStore } from '../state/store.js';
import type { Part, Sender } from '../sender/sender.js';
import type { RetryQueue } from '../queue/retry-queue.js';
import type { PieceKeeper } from '../queue/replayer.js';
import type { Clock } from '../util/clock.js';
import type { BodyDrops } from '../util/scavenge.js';
import type { LongLived } from '../util/lifecycle.js';
import type { StateWrites } from '../state/acker.js';
import { HeldBodies } from './held-bodies.js';
import { ReaderLetters } from './reader-letters.js';
import { ParkedHold } from './parked-hold.js';
import { QueueMoves } from './queue-moves.js';
import { RoomWaiters } from './room-waiters.js';
import { Semaphore } from '../sender/limiter.js';
import type { Body } from '../sender/body.js';

const EMPTY = Buffer.alloc(0);

/**
 * Batches allowed to compress ahead of the requests in flight: ready to go
 * the moment a request ends, whether the number of requests or their bytes
 * (max_in_flight_bytes) bind.
 */
export const PIPELINE_SLACK = 2;
/** Failed attempts in memory before a batch moves to the disk queue. */
export const QUICK_ATTEMPTS = 3;
export class Pipeline implements LongLived, SendSlots, PieceKeeper, DeadLetterPath {
  private readonly tasks = new Set<Promise<void>>();
  private active = 0;
  private compressing = 0;
  private compressingBytes = 0;
  private readonly roomWaiters = new RoomWaiters();
  /** When a batch was last acknowledged (clock ms; no_progress), kept across reloads: a reload is not progress. */
  private readonly progress: { lastAckAt?: number };
  private stopping = false;
  private readonly bodies: HeldBodies;
  private readonly compressSlots: Semaphore;
  private readonly letters: ReaderLetters;
  private readonly parked: ParkedHold;
  private readonly moves: QueueMoves;

  constructor(
    private readonly o: {
      store: StateStore;
      codec: Codec;
      sender: Sender;
      queue: RetryQueue;
      /** A batch entered the queue. */
      onQueued: () => void;
      deadLetters: DeadLetterStore;
      metrics: Metrics;
      log: Logger;
      clock: Clock;
      /**
       * Compressions at once (compression.threads, codec/threads.ts): as
       * many batches wait for them at most (fewer where the codec cuts
       * parts: compressingBound), each up to max_bytes uncompressed, so the
       * reader waits beyond that instead of piling raw batches up in memory.
       */
      compressionThreads: number;
      /** The most that can ever be in flight (sizes the body pool). */
      maxInFlightCeiling: number;
      /** Where bodies beyond `bodiesInMemoryBytes` are spilled (held-bodies.ts); prepared by the caller. */
      spillDir: string;
      bodiesInMemoryBytes: number;
      /** Takes back an uncompressed body once it is compressed; its open (unsent) batch bytes right now bound the reader with `maxOpenBytes`. */
      batcher: Pick<Batcher, 'recycle' | 'openBytes'>;
      /** Told of native memory dropped: a codec output copied into the body pool, or the buffers a spilled body was sent from (util/scavenge.ts gives them back). */
      bodyDrops?: BodyDrops;
      /** batch.max_open_bytes: the bound of the batcher's open bytes. */
      maxOpenBytes: number;
      /** batch.max_bytes: with max_open_bytes it bounds how many full batches may wait. */
      maxBatchBytes: number;
      /** Runs each state write, waiting out a full or unwritable state_dir (state/acker.ts). */
      writes: StateWrites;
      onFatal: (err: unknown) => void;
      /** A batch of a parked Data Source ended (moved to the disk queue): its paused files may be read again. */
      onParkedBatchDone?: () => void;
      /** The path of a file key of the state (to read a batch's ranges again). */
      pathOf: (key: string) => string | undefined;
      /** The run command's, kept across SIGHUP reloads (absent: from this pipeline's start). */
      progress?: { lastAckAt?: number };
    },
  ) {
    this.progress = o.progress ?? {};
    this.progress.lastAckAt ??= o.clock.now();
    this.compressSlots = new Semaphore(o.compressionThreads);
    this.letters = new ReaderLetters(o.deadLetters, o.store, o.metrics, o.writes);
    this.parked = new ParkedHold(() => o.sender.refusedDataSources(), o.onParkedBatchDone);
    this.moves = new QueueMoves({ ...o, retryStateWrite: (fn) => this.retryStateWrite(fn) });
    this.bodies = new HeldBodies({
      dir: o.spillDir,
      memoryBytes: o.bodiesInMemoryBytes,
      keep: o.maxInFlightCeiling + PIPELINE_SLACK,
      log: o.log,
      onSpilled: (bytes) => o.metrics.spilledBodyBytes.set(bytes),
      drops: o.bodyDrops,
      writes: o.writes,
      onWaitingChange: () => {
        if (this.bodies.waitingForDisk === 0) this.roomWaiters.wakeAll();
      },
    });
  }

  /** Requests allowed in flight now (the sender's concurrency limit; it moves with max_in_flight: auto). */
  private get maxInFlight(): number {
    return this.o.sender.inFlight.concurrencyLimit;
  }

  get batchesActive(): number {
    return this.active;
  }

  get lastAckAt(): number {
    return this.progress.lastAckAt!;
  }

  submit(batch: ClosedBatch): void {
    this.track(this.process(batch), batch.ds);
  }

  /** A re-formed batch from the journal (already has an intent). */
  submitRecovered(batch: ClosedBatch): void {
    this.track(this.process(batch, true), batch.ds);
  }

  /** A line the reader rejected (invalid JSON, too long): reader-letters.ts. */
  deadLetter(input: DeadLetterInput | null, key: string, entry: RangeEntry | null, onStored?: () => void): void {
    this.track(this.letters.add(input, key, entry, onStored), false);
  }

  /** True while closed batches wait for a send slot: the rate limit (or the API) binds, or the bytes in flight do. */
  get saturated(): boolean {
    return this.live >= this.maxInFlight + PIPELINE_SLACK || this.bytesBind();
  }

  /**
   * Batches under way, less those of parked Data Sources: those wait for
   * their park (in memory when the disk queue has no room), and counted as
   * room taken they stopped every other Data Source's reading for good.
   * `paused` bounds them instead.
   */
  private get live(): number {
    return this.active - this.parked.held();
  }

  /** A parked Data Source with PIPELINE_SLACK batches held: its files wait in the spool (read-loop.ts). */
  paused(ds: string): boolean {
    return this.parked.holds(ds, PIPELINE_SLACK);
  }

  /** Batches under way except those of `ds` (/readyz: a parked Data Source's batches are its park). */
  batchesActiveExcept(ds: ReadonlySet<string>): number {
    return this.active - this.parked.count(ds);
  }

  /** The budget or a Data Source was parked or unparked: the room may have changed. */
  parkChanged(): void {
    this.roomWaiters.wakeAll();
  }

  /**
   * Backpressure for the reader (and the start's re-sending, until `signal`
   * aborts). While the pipeline is saturated the reader keeps filling the
   * open batches (growing toward max_bytes) until max_open_bytes; full ones
   * may wait: max_open_bytes / max_bytes of them, at most max_in_flight. When
   * max_in_flight_bytes binds (slow answers), more compressed bodies than
   * PIPELINE_SLACK would only wait, in memory, for the same bytes.
   */
  async waitForRoom(signal?: AbortSignal): Promise<void> {
    while (this.full() && !this.stopping && !signal?.aborted) {
      await this.roomWaiters.wait(signal);
    }
  }

  /** The reader may read now without waiting (waitForRoom would resolve at once). */
  get hasRoom(): boolean {
    return !this.full() || this.stopping;
  }

  private full(): boolean {
    const extra = Math.min(this.maxInFlight, Math.ceil(this.o.maxOpenBytes / this.o.maxBatchBytes));
    return (
      // A body waits to be spilled to a full state_dir: more would wait in memory.
      this.bodies.waitingForDisk > 0 ||
      this.compressing >= this.o.compressionThreads ||
      this.compressingBytes >= this.compressingBound ||
      this.bytesBind() ||
      this.live >= this.maxInFlight + PIPELINE_SLACK + extra ||
      (this.saturated && this.o.batcher.openBytes >= this.o.maxOpenBytes)
    );
  }

  /** Wait for every task until `deadline` (on the clock); true when all finished. */
  async drainUntil(deadline: number): Promise<boolean> {
    while (this.tasks.size > 0) {
      const left = deadline - this.o.clock.now();
      if (left <= 0) return false;
      // Whichever comes first: every task settled (aborts the sleep), or the deadline.
      const settled = new AbortController();
      void Promise.allSettled([...this.tasks]).then(() => settled.abort());
      await this.o.clock.sleep(left, settled.signal);
      settled.abort();
    }
    return true;
  }

  /** Take no more batches and wait for every task, however long: the caller bounds it (a delivery waiting on a park ends when the sender closes). */
  async close(): Promise<void> {
    await this.destroy();
    while (this.tasks.size > 0) await Promise.allSettled([...this.tasks]);
  }

  /** Take no more batches and release the submitters waiting for room; tasks under way end as the sender ends them. */
  async destroy(): Promise<void> {
    this.stopping = true;
    this.roomWaiters.wakeAll();
  }

  /**
   * At most compression.threads compressions (of parts: codec/parts.ts) run at once, however many
   * batches close together (a read step can close dozens); the rest wait here, in closing order.
   */
  private readonly compressTurn = async (compress: () => Promise<Buffer>): Promise<Buffer> => {
    await this.compressSlots.acquire();
    try {
      return await compress();
    } finally {
      this.compressSlots.release();
    }
  };

  /**
   * Raw bytes waiting for or in compression beyond which the reader waits,
   * where the codec cuts batches into parts: a part for every thread and
   * one batch more, so that the threads find work while the reader fills
   * the next batch. With 2 threads that is two full batches, as many as
   * threads; with 16 it is three, not sixteen (their raw buffers are most
   * of the memory: bench/README.md, finding 38). A codec that compresses
   * whole batches needs one per thread: only their number binds.
   */
  private get compressingBound(): number {
    const part = this.o.codec.partBytes;
    return part === null ? Number.POSITIVE_INFINITY : this.o.compressionThreads * part + this.o.maxBatchBytes;
  }

  /** PIPELINE_SLACK compressed bodies already wait for room under max_in_flight_bytes. */
  private bytesBind(): boolean {
    return this.o.sender.inFlight.waitingForBytes >= PIPELINE_SLACK;
  }

  /** A batch's task (`ds`: counted as under way), or another task. */
  private track(p: Promise<void>, ds: string | false): void {
    if (ds !== false) {
      this.active++;
      this.parked.add(ds, 1);
    }
    const task = p
      .catch((err) => this.o.onFatal(err))
      .finally(() => {
        this.tasks.delete(task);
        if (ds !== false) {
          this.active--;
          this.parked.add(ds, -1);
          this.roomWaiters.wakeOne();
        }
      });
    this.tasks.add(task);
  }

  private async process(batch: ClosedBatch, recovered = false): Promise<void> {
    const { store, codec, sender, metrics } = this.o;
    if (batch.lines === 0) {
      // Only empty lines: nothing to send, but their bytes are done.
      await this.retryStateWrite(async () => void store.completeBatch(batch.id));
      return;
    }
    const rawLen = batch.body.length;
    this.compressing++;
    this.compressingBytes += rawLen;
    let frames: Buffer[];
    try {
      [frames] = await Promise.all([
        codec.compressFrames(batch.body, this.compressTurn),
        recovered ? Promise.resolve() : this.retryStateWrite(() => store.recordIntent(batch.id, batch.ds, batch.lines)),
      ]);
    } finally {
      this.compressing--;
      this.compressingBytes -= rawLen;
      this.roomWaiters.wakeAll();
    }
    metrics.batchBytes.observe(rawLen);
    // From here on the batch is its compressed bytes, held by the pipeline
    // (held-bodies.ts: in a buffer of its own pool, or spilled to a file), and
    // the uncompressed buffer goes back to the batcher: RSS stays flat. With
    // codec none the body is the batch's very buffer (not another slice of its
    // memory: Node's pool holds many), kept until delivered or on disk.
    const own = frames.length === 1 && frames[0] === batch.body;
    const holding = this.bodies.hold(frames, own);
    // The codec's output is copied now: unreferenced from here on, it dies young.
    frames = [];
    const held = await holding;
    const keepsBatch = own && Buffer.isBuffer(held);
    if (!keepsBatch) this.o.batcher.recycle(batch.body);
    batch.body = EMPTY;
    try {
      await this.deliver(batch, held, rawLen, !recovered);
    } finally {
      this.bodies.release(held);
      if (keepsBatch) this.o.batcher.recycle(held as Buffer);
    }
  }

  private async deliver(batch: ClosedBatch, body: Body, rawLen: number, neverSent: boolean): Promise<void> {
    const { store, codec, sender, metrics } = this.o;
    const root = { id: batch.id, ds: batch.ds, body, encoding: codec.contentEncoding, rawLen, lines: batch.lines };
    // Asked when the batch would move to the disk queue: its room is held from then on (queue-moves.ts).
    const room = this.moves.room(body.length);
    try {
      let unresolved: Part[] | null = null;
      const result = await sender.deliver(root, { canDefer: room.take, deferAfter: QUICK_ATTEMPTS, neverSent, onUnresolved: (pieces) => (unresolved = pieces) });
      if (result === 'done') {
        await this.retryStateWrite(async () => void store.completeBatch(batch.id));
        this.progress.lastAckAt = this.o.clock.now();
        metrics.ackLatency.observe(Math.max(0, this.o.clock.now() - batch.firstAt) / 1000);
        return;
      }
      if (unresolved) return await this.moves.queuePieces(batch.id, unresolved);
      // Deferred (quick attempts used up, or parked), or stopping: the batch
      // moves to the disk queue when it fits, and only once it is durable there
      // does the committed offset pass it. Without room it stays a journal
      // intent and is re-formed from the spool at the next start.
      if (room.take()) await this.moves.queueBatch(root);
    } finally {
      room.release();
    }
  }

  /** Write the unresolved pieces of batch `id` (a queued one the replayer was sending) to the disk queue: queue-moves.ts. */
  keepPieces(id: number, pieces: Part[]): Promise<boolean> {
    return this.moves.keepPieces(id, pieces);
  }

  /** Lines of a batch the platform refused (or an operator moved) go to the dead-letter store, each with its file and offset, in one write (logged by observe/sender-events.ts). */
  async deadLetterLines(batchId: number, ds: string, pieces: LinePieces, reason: DeadLetterReason, status: number | null): Promise<{ stored: number; lines: number }> {
    const inputs = await deadLetterInputs(ds, pieces, reason, status, this.o.store.batchRanges(batchId), this.o.pathOf, true);
    let stored = 0;
    await Promise.all(
      inputs.map(async (input) => {
        const r = await this.retryStateWrite(() => this.o.deadLetters.add(input));
        if (r === 'stored') {
          stored++;
          this.o.metrics.linesDeadLettered.inc({ datasource: ds, reason });
        }
      }),
    );
    return { stored, lines: inputs.length };
  }

  private retryStateWrite<T>(fn: () => Promise<T>): Promise<T> {
    return this.o.writes.retryStateWrite(fn);
  }
}
