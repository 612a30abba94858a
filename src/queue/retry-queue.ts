// Longer than ~250 lines: append, take, lease, ack and segment clean-up share
// one serial chain and one in-memory index, and are only safe together.
//
// Disk-backed retry queue: batches that could not be sent now (after a few
// quick retries, while parked, or at shutdown) wait here, so the tailer can
// move on and the spool files stay the only other buffer. On-disk layout:
// format.ts; reading, writing and indexing segment files: segments.ts.
//
// Invariants:
// - `append` resolves only after the record is fsync'd: the caller then lets
//   the source files' committed offsets pass the batch (docs/guarantees.md rule 1).
// - Only an index of offsets is in memory; records are read back lazily.
// - A torn tail (crash mid-write) is truncated at open; a damaged record is
//   skipped and reported (onCorrupt), never fatal: its lines are read again
//   from the spool when its ranges still have the CRCs kept with the queued
//   batch (state store), and counted lost otherwise.
// - A segment is deleted once all its records are acknowledged; past one
//   segment's size of acknowledged records, the closed segment with the most
//   is compacted (compact.ts): the files stay within max_bytes + 2 segments.
// - A record whose write fails (ENOSPC) is cut off again, so as not to hold
//   the space the journal needs. `diskBytes` is what the segments hold.
// - acks.log is rewritten (atomically) with the acks of records still on disk
//   when it holds ACKS_COMPACT_MIN records and twice as many as there are
//   records on disk, and at every open.
// - The queue holds at most `maxBytes` (record bytes on disk) and leaves a
//   reserve of its volume free (disk-room.ts); `hasRoom` says whether a batch
//   fits (callers keep it in memory, the tailer waits, when it does not; a
//   batch on its way in holds its room: pipeline/queue-moves.ts).
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { crashNow, shouldCrash } from '../util/crashpoint.js';
import { fsyncDir } from '../util/fsx.js';
import { DestroyedError, type LongLived } from '../util/lifecycle.js';
import { ACKS_FILE, encodeAck, encodeRecordPrefix, readAcks, segmentFile, type AcksDamagedHandler, type QueuedHeader, type QueueRef } from './format.js';
import { compactSegment, leftCopies, removeMarker, segmentBytesFor, segmentToCompact, type CompactTarget } from './compact.js';
import { DiskRoom, type QueueLimit } from './disk-room.js';
import { RecordIndex } from './record-index.js';
import { indexSegments, listLive, liveByDataSource, readHeaderAt, readRecordAt, writeAcksOf, writeAllAt, type Entry, type LiveRecord, type QueueCorruptHandler } from './segments.js';

export { SEGMENT_BYTES, type QueuedHeader, type QueueRef } from './format.js';

/** What `hasRoom` counts for a record besides its body (its header and framing, with a margin). */
export const RECORD_ROOM = 512;

/** Segment size (tests), and what compaction did: each step (tests), each segment moved or not ('failed': undone, tried again; 'stuck': no more compaction until a restart). */
export interface QueueOptions {
  segmentBytes?: number;
  onCompactStep?: CompactTarget['onStep'];
  onCompacted?: (e: { segment: number; records: number; outcome: 'done' | 'failed' | 'stuck' }) => void;
  /** acks.log holds damaged records (told at open, before it is rewritten): the batches they acknowledged come back. */
  onAcksDamaged?: AcksDamagedHandler;
}

export interface QueuedBatch {
  ref: QueueRef;
  header: QueuedHeader;
  body: Buffer;
}

export class RetryQueue implements LongLived {
  private ix = new RecordIndex({ entries: [], segBytes: new Map() });
  private writeSeg = 0;
  private writeFh: FileHandle | null = null;
  private writeSize = 0;
  private acksFh: FileHandle | null = null;
  /** Appends, acks and segment changes run one at a time (offsets are assigned from writeSize). */
  private chain: Promise<unknown> = Promise.resolve();
  /** Ack records in acks.log now (see ACKS_COMPACT_MIN). */
  private ackRecords = 0;
  /** A compaction failed and could not be undone: its marker waits for the next open (compact.ts). */
  private compactStuck = false;
  /** Segments that cannot be compacted (a record damaged or unreadable: take() reports it), until one is dropped. */
  private noCompact = new Set<number>();
  private closed = false;
  private disk!: DiskRoom;

  private constructor(
    private readonly dir: string,
    private readonly maxBytes: number,
    private readonly onCorrupt: QueueCorruptHandler,
    private readonly segmentBytes: number,
    private readonly t: QueueOptions,
  ) {}

  /** Segments are an eighth of maxBytes, at most SEGMENT_BYTES; tests make them small to cycle them, and look at compaction's steps. */
  static async open(dir: string, maxBytes: number, onCorrupt: QueueCorruptHandler, t: QueueOptions = {}): Promise<RetryQueue> {
    const q = new RetryQueue(dir, maxBytes, onCorrupt, t.segmentBytes ?? segmentBytesFor(maxBytes), t);
    await q.load();
    q.disk = await DiskRoom.open(dir);
    return q;
  }

  get bytes(): number {
    return this.ix.liveBytes;
  }

  get batches(): number {
    return this.ix.live;
  }

  /** Bytes of the segment files on disk: `bytes` plus acknowledged records in segments still holding others (spoolship_queue_bytes). */
  get diskBytes(): number {
    return this.ix.diskBytes;
  }

  /** Records not acknowledged, except those of these Data Sources (a record whose Data Source is not known yet counts). */
  batchesExcept(ds: ReadonlySet<string>): number {
    return this.ix.batchesExcept(ds);
  }

  /** Records not acknowledged, and their bytes on disk, per Data Source (a record whose header cannot be read counts in `batches` and `bytes` only). */
  byDataSource(): Promise<Map<string, { batches: number; bytes: number }>> {
    return liveByDataSource(this.ix.entries, (e) => this.headerOf(e));
  }

  hasRoom(bodyBytes: number): boolean {
    return this.ix.liveBytes + bodyBytes + RECORD_ROOM <= this.maxBytes && this.disk.fits(bodyBytes + RECORD_ROOM);
  }

  /** What bounds the queue now: `max_bytes`, or state_dir's volume (disk-room.ts). */
  get limit(): QueueLimit {
    return this.disk.limit(this.maxBytes - this.ix.liveBytes);
  }

  append(header: QueuedHeader, body: Buffer): Promise<QueueRef> {
    return this.serial(() => this.appendNow(header, body));
  }

  ack(ref: QueueRef): Promise<void> {
    return this.serial(() => this.ackNow(ref));
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const go = () => (this.closed ? Promise.reject(new DestroyedError('the disk queue')) : fn());
    const run = this.chain.then(go, go);
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async appendNow(header: QueuedHeader, body: Buffer): Promise<QueueRef> {
    // Written from its parts: copies of up to max_bytes showed in the peak RSS during outages.
    const prefix = encodeRecordPrefix(header, body);
    const recLen = prefix.length + body.length;
    await this.disk.mayWrite(recLen);
    // A record larger than a segment has one of its own (an empty segment is not left behind).
    if (!this.writeFh || (this.writeSize > 0 && this.writeSize + recLen > this.disk.segmentCap(this.segmentBytes, this.ix.diskBytes))) await this.rollSegment();
    const off = this.writeSize;
    // Test crash point: die with half of the record written.
    if (shouldCrash('queue-write')) {
      const rec = Buffer.concat([prefix, body]);
      await this.writeFh!.write(rec, 0, rec.length >> 1, off);
      crashNow();
    }
    try {
      await writeAllAt(this.writeFh!, [prefix, body], off);
      await this.writeFh!.sync();
    } catch (err) {
      // ENOSPC part way: cut off (needs no space); failing that, the next append writes over it.
      await this.writeFh!.truncate(off).catch(() => undefined);
      throw err;
    }
    this.writeSize += recLen;
    this.disk.wrote(recLen);
    this.ix.segBytes.set(this.writeSeg, this.writeSize);
    this.ix.add({ seg: this.writeSeg, off, len: recLen, acked: false, leased: false, ds: header.ds });
    return { seg: this.writeSeg, off };
  }

  /**
   * The oldest record not acknowledged and not already handed out, passing
   * over those whose Data Source `passOver` names (a parked one); null when none.
   */
  async take(passOver: (ds: string) => boolean = () => false): Promise<QueuedBatch | null> {
    for (const e of this.ix.entries) {
      if (e.acked || e.leased) continue;
      if (e.ds === undefined) e.ds = (await this.headerOf(e))?.header.ds;
      // Taken by a concurrent take() or acked while the header was read.
      if (e.acked || e.leased) continue;
      if (e.ds !== undefined && passOver(e.ds)) continue;
      // Leased before the read: a concurrent take() must not hand it out too.
      e.leased = true;
      const rec = await this.read(e);
      if (!rec) {
        // Corrupt: skipped for good (counted once) as if acknowledged; the owner,
        // told after the ack, finds it gone and reads its lines again from the spool.
        await this.ack({ seg: e.seg, off: e.off });
        this.onCorrupt(`segment ${e.seg} offset ${e.off}`, false, this.segPath(e.seg));
        continue;
      }
      return rec;
    }
    return null;
  }

  /**
   * Journal batch ids of the records not yet acknowledged (headers only). For
   * recovery: a batch queued durably before its journal ack was committed is
   * both here and an unacknowledged intent; it must not be re-formed from the
   * spool as well (that sent it twice although the server had never seen it).
   */
  async batchIds(): Promise<Set<number>> {
    return new Set((await this.list()).map((r) => r.header.id));
  }

  /**
   * Every record not acknowledged whose header can be read (the bodies are
   * not read; a record with a corrupt header is left to take(), which skips
   * and counts it), oldest first, and whether the replayer has it now.
   */
  list(): Promise<LiveRecord[]> {
    return listLive(this.ix.entries, (e) => this.headerOf(e));
  }

  /** Take a record out of the replayer's reach (an operator moves it); false when it is being sent or gone. */
  lease(ref: QueueRef): boolean {
    const e = this.find(ref);
    if (!e || e.acked || e.leased) return false;
    e.leased = true;
    return true;
  }

  /** One record, CRC-checked; null when it is damaged or gone. */
  async readRecord(ref: QueueRef): Promise<QueuedBatch | null> {
    const e = this.find(ref);
    return e && !e.acked ? this.read(e) : null;
  }

  /** Hand a taken record back (not delivered; e.g. the agent is stopping). */
  release(ref: QueueRef): void {
    const e = this.find(ref);
    if (e) e.leased = false;
  }

  private async ackNow(ref: QueueRef): Promise<void> {
    const e = this.find(ref);
    if (!e || e.acked) return;
    await this.acksFh!.write(encodeAck(ref));
    await this.acksFh!.sync();
    // Test crash point: die with the ack durable and nothing after it.
    if (shouldCrash('queue-ack')) crashNow();
    this.ackRecords++;
    this.ix.markAcked(e);
    await this.dropDoneSegments();
    await this.compactIfDue();
    // The acks of dropped segments are dead weight: acks.log grew without bound in long outages.
    if (this.ackRecords > Math.max(ACKS_COMPACT_MIN, 2 * this.ix.entries.length)) {
      await this.acksFh?.close();
      this.acksFh = null;
      await this.rewriteAcks();
    }
  }

  /** Every append and ack resolved is already fsync'd: closing writes nothing. */
  destroy(): Promise<void> {
    return this.close();
  }

  /** Closed, an append or ack still to run (one waiting out a full disk) ends as abandoned work (DestroyedError), not a write to a closed file. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([this.writeFh?.close(), this.acksFh?.close()]);
    this.writeFh = this.acksFh = null;
  }

  private find(ref: QueueRef): Entry | undefined {
    return this.ix.find(ref);
  }

  private segPath(seg: number): string {
    return segmentFile(this.dir, seg);
  }

  /** A record's header alone (the body is not read); null when it cannot be read (take() then reads the record, finds it damaged and skips it). */
  private async headerOf(e: Entry): Promise<{ header: QueuedHeader; bodyBytes: number } | null> {
    const rec = await readHeaderAt(this.segPath(e.seg), e);
    // Known from now on: take() may pass it over, byDataSource() need not read it again.
    if (rec) e.ds = rec.header.ds;
    return rec;
  }

  private async read(e: Entry): Promise<QueuedBatch | null> {
    const rec = await readRecordAt(this.segPath(e.seg), e);
    return rec && { ref: { seg: e.seg, off: e.off }, header: rec.header, body: rec.body };
  }

  private async rollSegment(): Promise<void> {
    await this.writeFh?.close();
    // Not a closed handle left behind when the open below fails (ENOSPC, EMFILE).
    this.writeFh = null;
    this.writeSeg++;
    this.writeFh = await fsp.open(this.segPath(this.writeSeg), 'w');
    this.writeSize = 0;
    this.ix.segBytes.set(this.writeSeg, 0);
    await fsyncDir(this.dir);
  }

  private async dropDoneSegments(): Promise<void> {
    // A segment without records (an append into it failed) goes too.
    for (const seg of this.ix.doneSegments()) await this.dropSegment(seg);
  }

  /** Delete segment `seg` (every record acknowledged, or its live ones copied by a compaction). */
  private async dropSegment(seg: number): Promise<void> {
    if (seg === this.writeSeg) {
      // The next append rolls to a new segment (appends and acks are serial: none is under way).
      await this.writeFh?.close();
      this.writeFh = null;
    }
    await fsp.rm(this.segPath(seg), { force: true });
    await this.disk?.look();
    this.ix.forgetSegment(seg);
    this.noCompact.delete(seg);
  }

  /** Compact while the segments hold more than one segment's size of acknowledged records (compact.ts). */
  private async compactIfDue(): Promise<void> {
    while (!this.compactStuck) {
      const seg = segmentToCompact(this.ix.uses(this.noCompact), this.writeFh ? this.writeSeg : -1, this.disk.segmentCap(this.segmentBytes, this.ix.diskBytes));
      if (seg === null) return;
      const records = this.ix.liveOf(seg).length;
      const r = await compactSegment(this.compactTarget(), seg).catch(() => 'stuck' as const);
      if (r !== 'skipped') this.t.onCompacted?.({ segment: seg, records, outcome: r });
      if (r === 'stuck') this.compactStuck = true;
      if (r === 'skipped') this.noCompact.add(seg);
      // A full disk: tried again at the next ack.
      if (r === 'failed') return;
    }
  }

  private compactTarget(): CompactTarget {
    const copies: Entry[] = [];
    return {
      dir: this.dir,
      leaseAll: (seg) => {
        const moving = this.ix.liveOf(seg);
        if (moving.some((e) => e.leased)) return false;
        for (const e of moving) e.leased = true;
        return moving.map((e) => ({ seg: e.seg, off: e.off }));
      },
      unleaseAll: (seg) => this.ix.liveOf(seg).forEach((e) => (e.leased = false)),
      idOf: async (ref) => (await this.headerOf(this.find(ref)!))?.header.id,
      copy: async (ref) => {
        const rec = await this.read(this.find(ref)!);
        if (!rec) return false;
        const copy = this.find(await this.appendNow(rec.header, rec.body))!;
        // Leased until the move is done: sent while it could still be undone, its original would go again.
        copy.leased = true;
        copies.push(copy);
        return true;
      },
      tail: () => (this.writeFh ? { seg: this.writeSeg, off: this.writeSize } : { seg: this.writeSeg + 1, off: 0 }),
      dropCopiesFrom: async (at) => {
        // The copies are all the records from `at` on (compaction runs in the serial chain).
        for (const seg of [...this.ix.segBytes.keys()].filter((n) => n > at.seg)) await this.dropSegment(seg);
        await this.writeFh?.close();
        this.writeFh = null;
        if (this.ix.segBytes.has(at.seg)) await fsp.truncate(this.segPath(at.seg), at.off);
        this.ix.cutFrom(at);
      },
      dropSegment: async (seg) => {
        await this.dropSegment(seg);
        await fsyncDir(this.dir);
        for (const e of copies) e.leased = false;
      },
      onStep: this.t.onCompactStep,
    };
  }

  /** Index every segment by walking frame headers (bodies are not read), apply acks, cut torn tails. */
  private async load(): Promise<void> {
    await fsp.mkdir(this.dir, { recursive: true });
    const acks = await readAcks(this.dir);
    if (acks.damaged.length > 0) this.t.onAcksDamaged?.(path.join(this.dir, ACKS_FILE), acks.damaged);
    const found = await indexSegments(this.dir, acks.acked, this.onCorrupt);
    this.ix = new RecordIndex(found);
    // The copies of a compaction cut short count as acknowledged (compact.ts); rewriteAcks below writes them.
    const copies = await leftCopies(this.dir, this.ix.entries, new Set(this.ix.segBytes.keys()), async (e) => (await this.headerOf(e))?.header.id);
    for (const e of copies) this.ix.markAcked(e);
    if (found.last) {
      this.writeSeg = found.last.seg;
      this.writeSize = found.last.end;
    }
    this.writeSeg = Math.max(this.writeSeg, 0);
    await this.dropDoneSegments();
    // Appends go to a fresh segment: the last one may have been cut.
    this.writeFh = null;
    await this.rewriteAcks();
    await removeMarker(this.dir);
  }

  /** Keep only acks of records still on disk, written atomically. */
  private async rewriteAcks(): Promise<void> {
    this.ackRecords = await writeAcksOf(this.dir, this.ix.entries);
    this.acksFh = await fsp.open(path.join(this.dir, ACKS_FILE), 'a');
  }
}

/** acks.log is rewritten once it holds this many records and twice as many as records on disk. */
export const ACKS_COMPACT_MIN = 1024;
