// Where the compressed bodies between compression and done are held: in
// memory while those in memory stay under a bound, beyond it in files of
// state_dir/spill that are unlinked as soon as they are opened.
//
// Why: with slow answers (1-2 s with wait=true from a distant region) up to
// max_in_flight_bytes (48 MiB by default) of bodies wait for their answers, on
// top of the agent's own ~130 MB; held in memory they took the peak RSS to
// 170-190 MB (bench/README.md, findings 30-33). A spilled body lives in the
// page cache, which the kernel can write out and reclaim under pressure, and
// is read back in 256 KiB steps while it is sent (or whole, for a 400's split
// or the disk queue). Fluent Bit's filesystem buffering does the same with its
// chunks ("up" in memory, "down" on disk). At loopback speed few requests are
// in flight, the bound is not reached and nothing is written.
//
// A full or read-only state_dir is the disk_full (state_dir_unwritable)
// state, as for every other state write (state/acker.ts): the fault is
// reported (/readyz, spoolship_parked), the body waits in memory and its
// spill is tried again every STATE_RETRY_MS, and the pipeline reads no more
// while one waits (`waitingForDisk`), so memory holds the few bodies
// compressed by then, not max_in_flight_bytes of them (up to 1 GiB with
// auto). Bodies already spilled free their room as their answers come, so a
// state_dir too small for the bodies in flight slows the agent down instead
// of growing its memory. Any other error (too many open files, say) leaves
// the body in memory: the bound is then max_in_flight_bytes; one WARN per
// episode. The files have no names once open, so a crash leaves nothing
// behind but the instant between open and unlink; `prepare` clears the
// directory at start, under the state lock.
import { lstat, mkdir, open, readdir, readlink, rm, unlink } from 'node:fs/promises';
import { StateLayoutError } from '../errors.js';
import path from 'node:path';
import type { Logger } from '../log.js';
import { SpilledBody, type Body } from '../sender/body.js';
import { BodyPool } from './body-pool.js';
import type { BodyDrops } from '../util/scavenge.js';
import { classifyStateError, type StateWrites } from '../state/acker.js';
import { DestroyedError } from '../util/lifecycle.js';

/**
 * Compressed bodies kept in memory before the next ones are spilled: ~4
 * bodies of a 10 MB batch at zstd 3 (1.7 MB each), more than loopback speed
 * keeps in flight, so that only slow answers spill.
 */
export const BODIES_IN_MEMORY_BYTES = 8 * 1024 * 1024;

export function spillDir(stateDir: string): string {
  return path.join(stateDir, 'spill');
}

export class HeldBodies {
  private inMemory = 0;
  private spilled = 0;
  private seq = 0;
  private failing = false;
  /** Holds whose spill waits out a full or read-only state_dir. */
  private waiting = 0;
  private readonly pool: BodyPool;

  constructor(
    private readonly o: {
      dir: string;
      /** Bodies in memory beyond which the next ones are spilled (0: spill every body). */
      memoryBytes: number;
      /** Free buffers the pool keeps. */
      keep: number;
      log: Logger;
      /** Bytes of bodies spilled now (the gauge spoolship_spilled_body_bytes). */
      onSpilled?: (bytes: number) => void;
      /** Told when a codec output was copied, or the buffers a spilled body was read into for a request are dropped (util/scavenge.ts). */
      drops?: BodyDrops;
      /** Runs each spill, waiting out a full or read-only state_dir (state/acker.ts). */
      writes: StateWrites;
      /** A hold started or stopped waiting for the state_dir (`waitingForDisk` changed). */
      onWaitingChange?: () => void;
    },
  ) {
    this.pool = new BodyPool(o.keep);
  }

  /** Empty (or create) the spill directory: files left by a crash between open and unlink. */
  static async prepare(dir: string): Promise<void> {
    // Never through a link: state_dir/spill pointing at someone's directory
    // had its files deleted by the clearing below.
    const st = await lstat(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null;
      throw err;
    });
    if (st?.isSymbolicLink()) throw new StateLayoutError(dir, `a symlink (to ${await readlink(dir).catch(() => '?')})`);
    if (st && !st.isDirectory()) throw new StateLayoutError(dir, 'not a directory');
    await mkdir(dir, { recursive: true, mode: 0o700 });
    for (const name of await readdir(dir)) await rm(path.join(dir, name), { force: true, recursive: true });
  }

  /**
   * Hold a compressed body, given as its frames, until release(). `own`: the
   * body is the batch's own memory (codec none, one frame), kept as it is;
   * otherwise the frames are copied, one after another, into the
   * pool at once and the codec's output is dropped (body-pool.ts says why:
   * held through a spill's write it would outlive young collections). Beyond
   * the bound the copy is written to a file and goes back to the pool.
   */
  hold(frames: Buffer[], own: boolean): Promise<Body> {
    const mine = own ? frames[0]! : this.pool.copy(frames);
    if (!own) this.o.drops?.dropped(mine.length, 'copied');
    // Not async itself: `body` must not stay referenced while the spill is written.
    return this.place(mine);
  }

  private async place(body: Buffer): Promise<Body> {
    // The first body always stays in memory (with codec none one batch alone
    // is larger than the bound: at loopback speed it would be written for
    // nothing), except with a bound of 0.
    const alone = this.inMemory === 0 && this.o.memoryBytes > 0;
    if (!alone && this.inMemory + body.length > this.o.memoryBytes) {
      const spilled = await this.spill(body);
      if (spilled) {
        this.pool.release(body);
        this.spilled += body.length;
        this.o.onSpilled?.(this.spilled);
        return spilled;
      }
    }
    this.inMemory += body.length;
    return body;
  }

  /** The body is done (delivered, queued or dead-lettered): its memory or file goes. */
  release(body: Body): void {
    if (Buffer.isBuffer(body)) {
      this.inMemory -= body.length;
      this.pool.release(body);
      return;
    }
    this.spilled -= body.length;
    this.o.onSpilled?.(this.spilled);
    body.close().catch(() => undefined);
  }

  /** Holds waiting for room (or write access) in state_dir to spill their body: the reader waits while any does. */
  get waitingForDisk(): number {
    return this.waiting;
  }

  /** Bytes of bodies in memory and spilled now. */
  get bytes(): { inMemory: number; spilled: number } {
    return { inMemory: this.inMemory, spilled: this.spilled };
  }

  private async spill(body: Buffer): Promise<SpilledBody | null> {
    let waits = false;
    try {
      const spilled = await this.o.writes.retryStateWrite(async () => {
        try {
          return await this.spillOnce(body);
        } catch (err) {
          if (classifyStateError(err) && !waits) {
            waits = true;
            this.waiting++;
            this.o.onWaitingChange?.();
          }
          throw err;
        }
      });
      if (this.failing) this.o.log.info({ event: 'body_spill_resumed', dir: this.o.dir }, 'compressed bodies are spilled to state_dir again');
      this.failing = false;
      return spilled;
    } catch (err) {
      // retryStateWrite waits out a full or read-only state_dir; it ends only when the agent stops.
      if (err instanceof DestroyedError) throw err;
      if (!this.failing) {
        this.o.log.warn(
          { event: 'body_spill_failed', dir: this.o.dir, err: (err as Error).message },
          'cannot spill compressed bodies to state_dir; they stay in memory (up to limits.max_in_flight_bytes) until it works again',
        );
      }
      this.failing = true;
      return null;
    } finally {
      if (waits) {
        this.waiting--;
        this.o.onWaitingChange?.();
      }
    }
  }

  /** Write `body` to a new file of the directory, unlinked once open; what a failure wrote is removed. */
  private async spillOnce(body: Buffer): Promise<SpilledBody> {
    const file = path.join(this.o.dir, `${process.pid}-${++this.seq}.body`);
    let fh: Awaited<ReturnType<typeof open>> | null = null;
    try {
      fh = await open(file, 'wx+', 0o600);
      await unlink(file);
      for (let pos = 0; pos < body.length; ) pos += (await fh.write(body, pos, body.length - pos, pos)).bytesWritten;
      return new SpilledBody(fh, body.length, this.o.drops);
    } catch (err) {
      await fh?.close().catch(() => undefined);
      await unlink(file).catch(() => undefined);
      throw err;
    }
  }
}
