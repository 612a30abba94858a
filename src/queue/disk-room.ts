// How much of state_dir's volume the disk retry queue may take (README "The
// disk retry queue"). `queue.max_bytes` is a bound the user sets; the volume
// is one nobody set, and a queue that filled it deadlocked: a queue segment
// is freed only once every record in it is acknowledged, acknowledging
// writes to acks.log and the journal, and the batches waiting out the full
// disk to enter the queue took every byte freed before an acknowledgement
// could. So the queue leaves a reserve of the volume free for those writes
// (and the checkpoint's): RESERVE_SHARE of the volume, within
// [RESERVE_MIN, RESERVE_MAX]; the dead-letter store keeps out of it too (it
// filled the reserve during an outage). Short of room there, the queue
// counts as full (reading pauses, batches wait in memory); only a write that
// finds others took the room since the last look meets the disk_full state.
// Segments are cut to an eighth of what the volume lets the queue hold, as
// they are to an eighth of max_bytes: one segment larger than the volume
// held every record, and a single batch of a parked Data Source kept all of
// it (compaction never moves the segment being written).
import { promises as fsp } from 'node:fs';
import { segmentBytesFor } from './compact.js';

export const RESERVE_SHARE = 0.05;
export const RESERVE_MIN = 64 * 1024;
export const RESERVE_MAX = 64 * 1024 * 1024;

/** The reserve kept free on a volume of `totalBytes`. */
export function reserveFor(totalBytes: number): number {
  return Math.min(RESERVE_MAX, Math.max(RESERVE_MIN, Math.floor(totalBytes * RESERVE_SHARE)));
}

/** Free bytes on `dir`'s volume for this process, and the volume's size; null where statfs fails (the queue is then bounded by max_bytes alone). */
async function volume(dir: string): Promise<{ free: number; total: number } | null> {
  try {
    const s = await fsp.statfs(dir);
    return { free: s.bavail * s.bsize, total: s.blocks * s.bsize };
  } catch {
    return null;
  }
}

/** What bounds the queue: `max_bytes`, or the volume (`room_bytes`: what the queue may still write there, -1 unknown; `reserve_bytes`: what it leaves free). */
export interface QueueLimit {
  by: 'max_bytes' | 'disk';
  room_bytes: number;
  reserve_bytes: number;
}

export class DiskRoom {
  /** Free bytes when last looked at, less what the queue wrote since. */
  private free = Number.POSITIVE_INFINITY;
  private looking: Promise<void> | null = null;
  reserve = RESERVE_MIN;

  private constructor(private readonly dir: string) {}

  static async open(dir: string): Promise<DiskRoom> {
    const room = new DiskRoom(dir);
    await room.look();
    return room;
  }

  /** Bytes the queue may still write before it reaches the reserve (Infinity when unknown). */
  get room(): number {
    return Math.max(0, this.free - this.reserve);
  }

  /** Whether `bytes` more fit now, by the last look; a no starts a fresh look, so space freed by others counts at the next ask. */
  fits(bytes: number): boolean {
    if (bytes <= this.room) return true;
    this.looking ??= this.look().finally(() => (this.looking = null));
    return false;
  }

  /** Look at the volume again (before each write, and after the queue freed space). */
  async look(): Promise<void> {
    const v = await volume(this.dir);
    if (!v) return;
    this.free = v.free;
    this.reserve = reserveFor(v.total);
  }

  /** Before a write of `bytes`: others may have taken space since the last look; the reserve is never written into (ENOSPC: the disk_full state). */
  async mayWrite(bytes: number): Promise<void> {
    await this.look();
    if (bytes > this.room) throw Object.assign(new Error(`${this.reserve} bytes of the state_dir volume are kept free for the disk queue's acknowledgements, the journal and the checkpoint`), { code: 'ENOSPC' });
  }

  /** What bounds a queue that `maxLeft` more bytes would take to `max_bytes`. */
  limit(maxLeft: number): QueueLimit {
    const room = this.room;
    return { by: maxLeft <= room ? 'max_bytes' : 'disk', room_bytes: Number.isFinite(room) ? room : -1, reserve_bytes: this.reserve };
  }

  /** The segment size for a queue holding `queueBytes` on disk: `configured`, or less on a volume that cannot hold eight of them. */
  segmentCap(configured: number, queueBytes: number): number {
    return Number.isFinite(this.room) ? Math.min(configured, segmentBytesFor(queueBytes + this.room)) : configured;
  }

  /** The queue wrote `bytes`. */
  wrote(bytes: number): void {
    this.free -= bytes;
  }
}
