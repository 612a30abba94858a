// V8's heap growing factor, set by the agent while its state is large
// (bench/README.md finding 29). V8 lets the old generation grow to up to ~4x
// what its last full collection kept alive; with 20,000 files (~40 MB of
// live per-file state) the garbage of scanning them and of checkpoints
// piled up to 100 MB of heap before a full collection ran: a 20,000-file
// spool peaked at 230 MB of RSS. At 25 % a full collection comes sooner
// (174-184 MB). With a small state V8's own choice stays: there the floor of
// V8's limit (the live heap + 8 MB) is what a low factor hits, and the
// extra full collections cost ~8 % CPU per GB of a backlog for no memory.
//
// V8 reads the flag at every full collection, so it can change at run time
// on any Node (0 gives the choice back to V8). A value given on node's
// command line is the user's: `run` then never calls this.
import v8 from 'node:v8';

/**
 * The agent follows or tracks at least this many files: the low factor
 * applies. As large as the discovery's first slice of paths (1,024), so a
 * large spool gets it after that slice, before the rest is scanned.
 */
export const MANY_FILES = 1024;
/** The old generation then grows by this percentage of what survived the last full collection. */
export const HEAP_GROWING_PERCENT = 25;

export class HeapGrowth {
  private current = 0;

  constructor(private readonly setFlags: (flags: string) => void = (f) => v8.setFlagsFromString(f)) {}

  /** The number of files followed or tracked now (called on the agent's tick). */
  update(files: number): void {
    const want = files >= MANY_FILES ? HEAP_GROWING_PERCENT : 0;
    if (want === this.current) return;
    this.current = want;
    this.setFlags(`--heap-growing-percent=${want}`);
  }

  /** The percentage in effect (0: V8's own). */
  get percent(): number {
    return this.current;
  }
}
