// Batches on their way into the disk queue: deferred (quick attempts used
// up, parked) or left at a stop, and the unresolved pieces of a batch cut by
// 400s. Only once a batch is durable there does the committed offset pass
// it (docs/guarantees.md rule 1).
//
// Room is held from the moment a batch is found to fit until its record is
// written: the queue counts a record once it is on disk, and a park moved
// dozens of batches at once, each of which saw the same room, so the queue
// grew to 8 times queue.max_bytes.
import { lineRanges, rangeCrcs } from '../recovery/reform.js';
import type { Logger } from '../log.js';
import type { QueuedHeader, RetryQueue } from '../queue/retry-queue.js';
import { RECORD_ROOM } from '../queue/retry-queue.js';
import type { Part, Sender } from '../sender/sender.js';
import { bodyBytes, type Body } from '../sender/body.js';
import type { StateStore } from '../state/store.js';
import type { Clock } from '../util/clock.js';

/** A batch's room in the queue: `take` holds it when it fits (true), again and again; `release` once the batch is written or went elsewhere. */
export interface QueueRoom {
  take: () => boolean;
  release: () => void;
}

/** A batch as it goes into the queue. */
export interface QueueableBatch {
  id: number;
  ds: string;
  body: Body;
  encoding: QueuedHeader['encoding'];
  rawLen: number;
  lines: number;
}

export class QueueMoves {
  /** Room held by batches not yet written. */
  private held = 0;

  constructor(
    private readonly o: {
      store: StateStore;
      queue: RetryQueue;
      sender: Pick<Sender, 'history' | 'forget'>;
      clock: Clock;
      log: Logger;
      pathOf: (key: string) => string | undefined;
      onQueued: () => void;
      retryStateWrite: <T>(fn: () => Promise<T>) => Promise<T>;
    },
  ) {}

  room(bodyBytes: number): QueueRoom {
    let mine = 0;
    return {
      take: () => mine > 0 || (mine = this.hold(bodyBytes)) > 0,
      release: () => {
        this.held -= mine;
        mine = 0;
      },
    };
  }

  /** Room for `bytes` of bodies (a record each: RECORD_ROOM more), held: its size, or 0 when it does not fit. */
  private hold(bytes: number, records = 1): number {
    if (!this.o.queue.hasRoom(this.held + bytes + (records - 1) * RECORD_ROOM)) return 0;
    const size = bytes + records * RECORD_ROOM;
    this.held += size;
    return size;
  }

  /** A batch whose room is held: its record, then its queued intent, then the batch is done. */
  async queueBatch(b: QueueableBatch): Promise<void> {
    const { store, queue } = this.o;
    // The ranges' CRCs now (page cache, queued batches only): a damaged queue
    // record is read again from the spool only if its bytes are the same.
    const ranges = store.intentRanges(b.id) ?? [];
    const crcs = await rangeCrcs(ranges, this.o.pathOf, (k) => store.metaOf(k));
    const bytes = await bodyBytes(b.body);
    const header = { id: b.id, ds: b.ds, encoding: b.encoding, rawLen: b.rawLen, lines: b.lines, queuedAt: this.o.clock.now(), history: this.o.sender.history(b.id) ?? undefined };
    await this.o.retryStateWrite(() => queue.append(header, bytes));
    await this.o.retryStateWrite(() => store.recordQueued({ id: b.id, ds: b.ds, lines: b.lines, ranges: ranges.map((r, i) => ({ ...r, crc: crcs[i] ?? null })) }));
    await this.o.retryStateWrite(async () => void store.completeBatch(b.id));
    this.o.onQueued();
  }

  /**
   * The agent stops while a batch is being cut by 400s (or 413s) and some of
   * its pieces are acknowledged: the pieces left go to the disk queue as
   * batches of their own (new ids, the file ranges of their lines, their
   * exact bytes) and the batch is done, so no acknowledged line is sent again
   * after the restart. Without room in the queue the batch stays a journal
   * intent and comes back whole, as before.
   */
  async queuePieces(id: number, pieces: Part[]): Promise<void> {
    if (!(await this.keepPieces(id, pieces))) return;
    await this.o.retryStateWrite(async () => void this.o.store.completeBatch(id));
    this.o.sender.forget(id);
    this.o.onQueued();
  }

  /**
   * Write the unresolved pieces of batch `id` (a fresh one, or a queued one
   * the replayer was sending) to the disk queue; false when they do not fit.
   * The caller then completes the batch itself.
   */
  async keepPieces(id: number, pieces: Part[]): Promise<boolean> {
    const { store, queue } = this.o;
    const held = this.hold(pieces.reduce((n, p) => n + p.body.length, 0), pieces.length);
    if (held === 0) return false;
    try {
      const identity = (k: string) => store.metaOf(k);
      // Pieces come sorted by their first line: one read of the batch's ranges for all of them.
      const spans = await lineRanges(store.batchRanges(id) ?? [], this.o.pathOf, pieces.map((p) => ({ first: p.lineStart, count: p.lines })), identity);
      // No history: the batch's attempts and last answer are not this piece's (`queue list`: unknown).
      for (const [i, p] of pieces.entries()) {
        const pieceId = store.newBatchId();
        const own = spans[i] ?? [];
        const crcs = await rangeCrcs(own, this.o.pathOf, identity);
        const bytes = await bodyBytes(p.body);
        await this.o.retryStateWrite(() => queue.append({ id: pieceId, ds: p.ds, encoding: p.encoding, rawLen: p.rawLen, lines: p.lines, queuedAt: this.o.clock.now() }, bytes));
        await this.o.retryStateWrite(() => store.recordQueued({ id: pieceId, ds: p.ds, lines: p.lines, ranges: own.map((r, i) => ({ ...r, crc: crcs[i] ?? null })) }));
      }
    } finally {
      this.held -= held;
    }
    const ds = pieces[0]?.ds;
    this.o.log.info({ event: 'batch_pieces_queued', batch: id, datasource: ds, pieces: pieces.length, lines: pieces.reduce((n, p) => n + p.lines, 0) }, 'stopping while a batch was being cut: its unresolved pieces wait in the disk queue');
    return true;
  }
}
