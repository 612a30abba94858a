// The retry queue's in-memory index of its records (retry-queue.ts does the
// I/O): where each record is, whether it is acknowledged or handed out, and
// the totals kept with them, so that no change of a record can forget its
// bytes. Never the bodies.
import type { QueueRef } from './format.js';
import type { SegmentUse } from './compact.js';
import { isBefore, type Entry } from './segments.js';

export class RecordIndex {
  /** Oldest first. */
  entries: Entry[] = [];
  /** Bytes of the records not acknowledged (frames included). */
  liveBytes = 0;
  /** Records not acknowledged. */
  live = 0;
  /** Each segment's size on disk (records acknowledged or not, damaged ones too). */
  readonly segBytes: Map<number, number>;

  constructor(found: { entries: Entry[]; segBytes: Map<number, number> }) {
    this.segBytes = found.segBytes;
    for (const e of found.entries) this.add(e);
  }

  add(e: Entry): void {
    this.entries.push(e);
    if (e.acked) return;
    this.liveBytes += e.len;
    this.live++;
  }

  find(ref: QueueRef): Entry | undefined {
    return this.entries.find((x) => x.seg === ref.seg && x.off === ref.off);
  }

  markAcked(e: Entry): void {
    if (e.acked) return;
    e.acked = true;
    e.leased = false;
    this.liveBytes -= e.len;
    this.live--;
  }

  /** The records not acknowledged of segment `seg`. */
  liveOf(seg: number): Entry[] {
    return this.entries.filter((e) => e.seg === seg && !e.acked);
  }

  /** Forget segment `seg` and its records (those not acknowledged were copied elsewhere). */
  forgetSegment(seg: number): void {
    for (const e of this.liveOf(seg)) this.markAcked(e);
    this.entries = this.entries.filter((e) => e.seg !== seg);
    this.segBytes.delete(seg);
  }

  /** Forget every record from `at` on; segment `at.seg` now ends there. */
  cutFrom(at: QueueRef): void {
    for (const e of this.entries) if (!isBefore(e, at)) this.markAcked(e);
    this.entries = this.entries.filter((e) => isBefore(e, at));
    if (this.segBytes.has(at.seg)) this.segBytes.set(at.seg, at.off);
  }

  /** Segments every record of which is acknowledged (or that hold none). */
  doneSegments(): number[] {
    const holding = new Set(this.entries.filter((e) => !e.acked).map((e) => e.seg));
    return [...this.segBytes.keys()].filter((seg) => !holding.has(seg));
  }

  get diskBytes(): number {
    return [...this.segBytes.values()].reduce((n, b) => n + b, 0);
  }

  /** Each segment's use; `blocked` ones count as leased (not to compact now). */
  uses(blocked: ReadonlySet<number>): SegmentUse[] {
    const use = new Map<number, SegmentUse>();
    for (const [seg, bytes] of this.segBytes) use.set(seg, { seg, dead: bytes, live: 0, leased: blocked.has(seg) });
    for (const e of this.entries) {
      const u = use.get(e.seg);
      if (!u || e.acked) continue;
      u.dead -= e.len;
      u.live += e.len;
      u.leased ||= e.leased;
    }
    return [...use.values()];
  }

  /** Records not acknowledged, except those of these Data Sources (a record whose Data Source is not known yet counts). */
  batchesExcept(ds: ReadonlySet<string>): number {
    return ds.size === 0 ? this.live : this.entries.filter((e) => !e.acked && (e.ds === undefined || !ds.has(e.ds))).length;
  }
}
