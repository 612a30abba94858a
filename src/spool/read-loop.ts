// One read round: a chunk from every file with unread bytes, into the
// spooler's one buffer, waiting whenever the pipeline is full
// (backpressure), so memory never grows with the backlog. Descriptors of
// files read to their end go back beyond FD_BUDGET or after idle_ms.
//
// A detached file (renamed out of the patterns, moved to another
// directory, deleted) is read through its descriptor until it has been
// idle for idle_ms, and only then finished, its partial last line sent
// whole: with logrotate's default rotation (rename, create, then signal)
// the application writes to the renamed file until it reopens, and a
// file finished at its first end after the rename lost those lines and
// sent the half-written one split (Filebeat's close_inactive is the
// model). A deleted file too (logrotate's rotate 0, compress without
// delaycompress): its writer goes on writing to it until it reopens, so
// finishing it at its end (Filebeat's close_removed) lost about a second of
// lines per rotation and split the line in progress. It is read until it
// has not grown for idle_ms (counted from its last write, not from the
// deletion: one its writer had left is finished at once); its descriptor
// holds its disk space until then.
import { sharedBuffer } from '../batcher/buffers.js';
import type { ReadOptions } from './options.js';
import { READ_HERE, ScanReader, type ChunkReader } from './scan-reader.js';
import type { FileTailer } from './tailer.js';
import { followed, quietSince, type Tailers } from './tailers.js';

export const READ_BUFFER_BYTES = 1024 * 1024;
/**
 * Open descriptors kept for files read to their end. Beyond it a file is
 * closed at its end and reopened when it grows: 10,000 files must not mean
 * 10,000 descriptors. Below it, descriptors stay open so a rename out of the
 * patterns is followed through the open file.
 */
export const FD_BUDGET = 1000;

export class ReadLoop {
  private readonly buf = sharedBuffer(READ_BUFFER_BYTES);
  /** Reads and looks at chunks: in a thread of its own (readerThread), else here. */
  private readonly scanner: ChunkReader;
  private readonly thread: ScanReader | null;

  constructor(
    private readonly o: ReadOptions,
    private readonly tailers: Tailers,
  ) {
    this.thread = o.readerThread ? new ScanReader(o.events.onReaderThreadFailed, o.events.onReaderThreadReady) : null;
    this.scanner = this.thread ?? READ_HERE;
  }

  /** The reads are over (the spooler's loop has ended): stop the reader thread. */
  async close(): Promise<void> {
    await this.thread?.close();
  }

  /**
   * Read one chunk from every file with unread bytes; true when anything was
   * read. `yieldWhenFull`: stop at the first file the pipeline has no room
   * for instead of waiting (a round between a scan's slices: the scan goes
   * on, and the next round starts again from the first file). `interrupt`:
   * stop waiting for room when it aborts (a scan is due: spooler.ts).
   */
  async round(stopped: () => boolean, yieldWhenFull = false, interrupt?: AbortSignal): Promise<boolean> {
    let any = false;
    let openFds = this.tailers.openDescriptors;
    for (const t of this.tailers.list()) {
      if (stopped()) return any;
      if (!followed(t)) continue;
      // Rewritten under the reader: the scan starts it again from 0 (discovery.ts).
      if (t.changedUnder && !t.detached) continue;
      if (t.detached && t.endSeen && t.lastSize <= t.readOffset) {
        // Read to its end; its size is updated by each scan's fstat of the descriptor.
        if (this.awayForGood(t)) await this.finishDetached(t, yieldWhenFull, interrupt);
        continue;
      }
      // Nothing new since the last look (the rescan and watch events update
      // lastSize): no read, no descriptor. A detached file is read until a
      // read finds its end.
      if (!t.detached && t.lastSize <= t.readOffset) {
        // Over the descriptor budget, or idle for idle_ms: give it back (not
        // while a partial last line waits: its deletion is seen through it).
        if (t.fh && !t.pinned && (openFds > FD_BUDGET || (this.idle(t) && t.carriedBytes === 0))) {
          await t.closeFd();
          openFds--;
        }
        continue;
      }
      if (this.o.room.paused?.(t.ds)) continue;
      if (yieldWhenFull && !this.o.room.hasRoom) return any;
      await this.o.room.waitForRoom(interrupt);
      if (stopped() || interrupt?.aborted) return any;
      const hadFd = t.fh !== null;
      const n = await t.readOnce(this.buf, this.o.batcher, this.scanner);
      if (!hadFd && t.fh) openFds++;
      this.reportReadability(t);
      if (n > 0) {
        any = true;
        t.grew(this.o.clock.now());
        // Read to its known end while over the budget: close it now, not a round later.
        if (t.readOffset >= t.lastSize && openFds > FD_BUDGET && !t.detached && !t.pinned) {
          await t.closeFd();
          openFds--;
        }
      } else {
        t.readToEnd();
        await this.atEnd(t, yieldWhenFull, interrupt);
      }
    }
    return any;
  }

  /** A read found the file unreadable, or readable again (the scan's opens count too: the change waits in the tailer). */
  private reportReadability(t: FileTailer): void {
    const change = t.readabilityChange();
    if (change === 'unreadable') this.o.events.onUnreadable?.(t.ds, t.path, t.unreadable!);
    else if (change === 'readable') this.o.events.onReadable?.(t.ds, t.path);
  }

  /**
   * How long a file has not been written to: since a read last found it
   * grown, or since its mtime, whichever is longer ago; a backlog read just
   * now may have been written long before. (The clock is wall time in the
   * agent, as mtimes are.)
   */
  private unwrittenFor(t: FileTailer): number {
    const now = this.o.clock.now();
    return t.lastMtimeMs > 0 ? now - Math.min(t.lastGrowthAt, t.lastMtimeMs) : now - t.lastGrowthAt;
  }

  private idle(t: FileTailer): boolean {
    return this.o.clock.now() - quietSince(t) >= this.o.idleMs;
  }

  /**
   * A detached file read to its end is finished: with its descriptor, once
   * idle (deleted: since its last write); without one (it left every path we could find while
   * its descriptor was closed), once gone for forget_after_ms, since one
   * that comes back sooner (moved away and back, a directory renamed for a
   * moment) reads on where it was.
   */
  private awayForGood(t: FileTailer): boolean {
    // Deleted: idle since its last write, not since the deletion was seen (a
    // file its writer had left is finished at once, its remainder sent then).
    if (t.fh) return t.deleted ? this.unwrittenFor(t) >= this.o.idleMs : this.idle(t);
    return this.o.clock.now() - (t.goneSince ?? Number.NEGATIVE_INFINITY) >= this.o.forgetAfterMs;
  }

  /**
   * A detached file at its end and away for good (awayForGood): one last
   * look for new bytes, then the partial last line goes whole and the file
   * is finished.
   */
  private async finishDetached(t: FileTailer, yieldWhenFull: boolean, interrupt?: AbortSignal): Promise<void> {
    if (t.fh) {
      // No room between a scan's slices, or a scan is due: finished at a later round.
      if (yieldWhenFull && !this.o.room.hasRoom) return;
      await this.o.room.waitForRoom(interrupt);
      if (interrupt?.aborted) return;
    }
    if (t.fh && (await t.readOnce(this.buf, this.o.batcher, this.scanner)) > 0) {
      t.grew(this.o.clock.now());
      return;
    }
    await t.flushRemainder(this.o.batcher);
    t.finish();
    await t.closeFd();
    // With on_complete: delete, a file still there is finished once deleted (completion.ts says so then).
    if (t.deleted || this.o.onComplete === 'keep') this.o.events.onFinished(t.ds, t.path, false, t.deleted);
  }

  private async atEnd(t: FileTailer, yieldWhenFull: boolean, interrupt?: AbortSignal): Promise<void> {
    if (t.detached) {
      if (t.fh && this.awayForGood(t)) await this.finishDetached(t, yieldWhenFull, interrupt);
      return;
    }
    if (this.idle(t) && t.fh && !t.pinned && t.carriedBytes === 0) {
      // Idle: give the descriptor back; the rescan reopens the file when it grows.
      // A file ending in a partial line keeps it (within the descriptor
      // budget): deleted, the fstat through it says so, and the remainder
      // goes at once (docs/spool.md), not after forget_after_ms.
      await t.closeFd();
    }
  }
}
