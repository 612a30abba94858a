// Longer than ~250 lines: append, take, lease, ack and segment clean-up share
// one serial chain and one in-memory index, and are only safe together.
//
// Disk-backed retry queue: batches that could not be sent now (after a few
// quick retries, while parked, or at shutdown) wait here, so the tailer can
// move on and the spool files stay the only other buffer.
//
// On-disk layout (segments and acks.log): format.ts; reading, writing and
// indexing the segment files: segments.ts.
//
// Invariants:
// - `append` resolves only after the record is fsync'd: the caller then lets
//   the source files' committed offsets pass the batch (docs/guarantees.md rule 1).
// - Records are read back lazily, one at a time; only an index of offsets is
//   kept in memory, never the bodies.
// - A torn tail (crash mid-write) is truncated at open; a damaged record
//   (its CRC does not match, or its length runs past the end while a valid
//   record follows) is skipped and reported (onCorrupt). Neither is fatal:
//   the agent reads a damaged record's lines again from the spool when its
//   ranges still have the CRCs kept with the queued batch (state store), and
//   counts them in spoolship_lines_lost_total otherwise.
// - A segment is deleted once every record in it is acknowledged, the one
//   being written too (the next append starts a new one): a drained queue
//   kept its last segment, up to SEGMENT_BYTES of delivered records on a
//   disk that may be full, while spoolship_queue_bytes read 0.
// - A record whose write fails (ENOSPC) is cut off again: its bytes would
//   sit in the segment, counted nowhere, holding the space the journal
//   needs to recover. `diskBytes` is what the segments hold on disk.
// - acks.log is rewritten (atomically) with the
//   acks of records still on disk when it holds ACKS_COMPACT_MIN records and
//   twice as many as there are records on disk, and at every open.
// - The queue holds at most `maxBytes` (record bytes on disk); `hasRoom` says
//   whether a batch fits, and callers keep the batch in memory (and the
//   tailer waits) when it does not.
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { crashNow, shouldCrash } from '../util/crashpoint.js';
import { fsyncDir } from '../util/fsx.js';
import type { LongLived } from '../util/lifecycle.js';
import { ACKS_FILE, encodeAck, encodeRecordPrefix, readAcks, SEGMENT_BYTES, segmentFile, type QueuedHeader, type QueueRef } from './format.js';
import { indexSegments, readHeaderAt, readRecordAt, writeAllAt, type Entry } from './segments.js';

export { SEGMENT_BYTES, type QueuedHeader, type QueueRef } from './format.js';

export interface QueuedBatch {
  ref: QueueRef;
  header: QueuedHeader;
  body: Buffer;
}

export class RetryQueue implements LongLived {
  private entries: Entry[] = [];
  private writeSeg = 0;
  private writeFh: FileHandle | null = null;
  private writeSize = 0;
  private acksFh: FileHandle | null = null;
  private totalBytes = 0;
  private live = 0;
  /** Each segment's size on disk (records acknowledged or not, damaged ones too). */
  private segBytes = new Map<number, number>();
  /** Appends, acks and segment changes run one at a time (offsets are assigned from writeSize). */
  private chain: Promise<unknown> = Promise.resolve();
  /** Ack records in acks.log now (see ACKS_COMPACT_MIN). */
  private ackRecords = 0;

  private constructor(
    private readonly dir: string,
    private readonly maxBytes: number,
    private readonly onCorrupt: (what: string, torn?: boolean) => void,
    private readonly segmentBytes: number,
  ) {}

  /** `segmentBytes`: SEGMENT_BYTES (tests make it small, to cycle segments). */
  static async open(dir: string, maxBytes: number, onCorrupt: (what: string, torn?: boolean) => void, segmentBytes = SEGMENT_BYTES): Promise<RetryQueue> {
    const q = new RetryQueue(dir, maxBytes, onCorrupt, segmentBytes);
    await q.load();
    return q;
  }

  get bytes(): number {
    return this.totalBytes;
  }

  get batches(): number {
    return this.live;
  }

  /** Bytes of the segment files on disk: `bytes` plus acknowledged records in segments still holding others (spoolship_queue_bytes). */
  get diskBytes(): number {
    let n = 0;
    for (const b of this.segBytes.values()) n += b;
    return n;
  }

  /** Records not acknowledged, except those of these Data Sources (a record whose Data Source is not known yet counts). */
  batchesExcept(ds: ReadonlySet<string>): number {
    if (ds.size === 0) return this.live;
    let n = 0;
    for (const e of this.entries) if (!e.acked && (e.ds === undefined || !ds.has(e.ds))) n++;
    return n;
  }

  /** Records not acknowledged, and their bytes on disk, per Data Source (a record whose header cannot be read counts in `batches` and `bytes` only). */
  async byDataSource(): Promise<Map<string, { batches: number; bytes: number }>> {
    const out = new Map<string, { batches: number; bytes: number }>();
    for (const e of this.entries) {
      if (e.acked) continue;
      const ds = e.ds ?? (await this.headerOf(e))?.header.ds;
      if (ds === undefined || e.acked) continue;
      const d = out.get(ds) ?? { batches: 0, bytes: 0 };
      d.batches++;
      d.bytes += e.len;
      out.set(ds, d);
    }
    return out;
  }

  hasRoom(bodyBytes: number): boolean {
    return this.totalBytes + bodyBytes + 512 <= this.maxBytes;
  }

  append(header: QueuedHeader, body: Buffer): Promise<QueueRef> {
    return this.serial(() => this.appendNow(header, body));
  }

  ack(ref: QueueRef): Promise<void> {
    return this.serial(() => this.ackNow(ref));
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async appendNow(header: QueuedHeader, body: Buffer): Promise<QueueRef> {
    // Written from its parts, without copying the body twice (payload, then
    // frame): those copies of up to max_bytes each showed in the peak RSS
    // during outages.
    const prefix = encodeRecordPrefix(header, body);
    const recLen = prefix.length + body.length;
    if (!this.writeFh || this.writeSize + recLen > this.segmentBytes) await this.rollSegment();
    const off = this.writeSize;
    if (shouldCrash('queue-write')) {
      // Test crash point: die with half of the record written.
      const rec = Buffer.concat([prefix, body]);
      await this.writeFh!.write(rec, 0, rec.length >> 1, off);
      crashNow();
    }
    try {
      await writeAllAt(this.writeFh!, [prefix, body], off);
      await this.writeFh!.sync();
    } catch (err) {
      // ENOSPC part way: 3.1 MB of a record that will never be read sat in
      // the segment on a full disk. Cutting it off frees them (truncating
      // needs no space); should that fail too, the next append writes over
      // them from `off` and an open cuts them as a torn tail.
      await this.writeFh!.truncate(off).catch(() => undefined);
      throw err;
    }
    this.writeSize += recLen;
    this.segBytes.set(this.writeSeg, this.writeSize);
    this.entries.push({ seg: this.writeSeg, off, len: recLen, acked: false, leased: false, ds: header.ds });
    this.totalBytes += recLen;
    this.live++;
    return { seg: this.writeSeg, off };
  }

  /**
   * The oldest record not acknowledged and not already handed out, passing
   * over those whose Data Source `passOver` names (a parked one); null when none.
   */
  async take(passOver: (ds: string) => boolean = () => false): Promise<QueuedBatch | null> {
    for (const e of this.entries) {
      if (e.acked || e.leased) continue;
      if (e.ds === undefined) e.ds = (await this.headerOf(e))?.header.ds;
      // Taken by a concurrent take() or acked while the header was read.
      if (e.acked || e.leased) continue;
      if (e.ds !== undefined && passOver(e.ds)) continue;
      // Leased before the read: a concurrent take() must not hand it out too.
      e.leased = true;
      const rec = await this.read(e);
      if (!rec) {
        // Corrupt: skip it for good (counted once), as if acknowledged; the
        // owner is told after the ack, so it finds the record gone and reads
        // its lines again from the spool.
        await this.ack({ seg: e.seg, off: e.off });
        this.onCorrupt(`segment ${e.seg} offset ${e.off}`);
        continue;
      }
      return rec;
    }
    return null;
  }

  /**
   * Journal batch ids of the records not yet acknowledged (headers only, the
   * bodies are not read). For recovery: a batch is queued durably *before* its
   * journal ack is group-committed, so after a kill -9 in between it is both
   * here and an unacknowledged intent; the agent must not re-form it from the
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
  async list(): Promise<Array<{ ref: QueueRef; len: number; bodyBytes: number; header: QueuedHeader; leased: boolean }>> {
    const out: Array<{ ref: QueueRef; len: number; bodyBytes: number; header: QueuedHeader; leased: boolean }> = [];
    for (const e of this.entries) {
      if (e.acked) continue;
      // A corrupt header (null) is left to take(), which skips and counts the record.
      const rec = await this.headerOf(e);
      if (rec && !e.acked) out.push({ ref: { seg: e.seg, off: e.off }, len: e.len, bodyBytes: rec.bodyBytes, header: rec.header, leased: e.leased });
    }
    return out;
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
    this.ackRecords++;
    e.acked = true;
    e.leased = false;
    this.totalBytes -= e.len;
    this.live--;
    await this.dropDoneSegments();
    // The acks of dropped segments are dead weight: through a long outage in
    // which the queue keeps cycling, acks.log grew without bound (it was
    // compacted only at start).
    if (this.ackRecords > Math.max(ACKS_COMPACT_MIN, 2 * this.entries.length)) {
      await this.acksFh?.close();
      this.acksFh = null;
      await this.rewriteAcks();
    }
  }

  /** Every append and ack resolved is already fsync'd: closing writes nothing. */
  destroy(): Promise<void> {
    return this.close();
  }

  async close(): Promise<void> {
    await this.writeFh?.close();
    await this.acksFh?.close();
    this.writeFh = null;
    this.acksFh = null;
  }

  private find(ref: QueueRef): Entry | undefined {
    return this.entries.find((x) => x.seg === ref.seg && x.off === ref.off);
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
    this.segBytes.set(this.writeSeg, 0);
    await fsyncDir(this.dir);
  }

  private async dropDoneSegments(): Promise<void> {
    const bySeg = new Map<number, boolean>();
    for (const e of this.entries) bySeg.set(e.seg, (bySeg.get(e.seg) ?? true) && e.acked);
    for (const [seg, allAcked] of bySeg) {
      if (!allAcked) continue;
      if (seg === this.writeSeg) {
        // The next append rolls to a new segment (appends and acks are serial: none is under way).
        await this.writeFh?.close();
        this.writeFh = null;
      }
      await fsp.rm(this.segPath(seg), { force: true });
      this.entries = this.entries.filter((e) => e.seg !== seg);
      this.segBytes.delete(seg);
    }
  }

  /** Index every segment by walking frame headers (bodies are not read), apply acks, cut torn tails. */
  private async load(): Promise<void> {
    await fsp.mkdir(this.dir, { recursive: true });
    const found = await indexSegments(this.dir, await readAcks(this.dir), this.onCorrupt);
    this.entries = found.entries;
    this.totalBytes = found.liveBytes;
    this.live = found.live;
    this.segBytes = found.segBytes;
    if (found.last) {
      this.writeSeg = found.last.seg;
      this.writeSize = found.last.end;
    }
    this.writeSeg = Math.max(this.writeSeg, 0);
    await this.dropDoneSegments();
    // Appends go to a fresh segment: the last one may have been cut.
    this.writeFh = null;
    await this.rewriteAcks();
  }

  /** Keep only acks of records still on disk, written atomically. */
  private async rewriteAcks(): Promise<void> {
    const file = path.join(this.dir, ACKS_FILE);
    const keep = this.entries.filter((e) => e.acked).map((e) => encodeAck(e));
    this.ackRecords = keep.length;
    const tmp = `${file}.tmp`;
    await fsp.writeFile(tmp, Buffer.concat(keep));
    const fh = await fsp.open(tmp, 'r+');
    await fh.sync();
    await fh.close();
    await fsp.rename(tmp, file);
    await fsyncDir(this.dir);
    this.acksFh = await fsp.open(file, 'a');
  }
}

/** acks.log is rewritten once it holds this many records and twice as many as records on disk. */
export const ACKS_COMPACT_MIN = 1024;
