// Compressed bodies' native memory, given back soon after the pipeline drops
// it (bench/README.md finding 32).
//
// The codec hands each compressed body back as memory outside V8's heap,
// freed only when V8 collects the small JS object in front of it. The
// pipeline copies every body into a buffer of its own at once (body-pool.ts),
// so that object dies young, but it is collected only at the next scavenge of
// the young generation, and an agent that mostly waits on slow answers
// allocates little JavaScript, so few run: at the peak of a backlog shipped
// against 2 s answers ~13 MB of dropped outputs were still resident (and,
// with MALLOC_ARENA_MAX=1, raised the one arena's high-water mark). The
// pipeline says how many bytes it dropped; once they reach
// SCAVENGE_AFTER_BYTES a young-generation collection runs in the next turn
// of the event loop (when nothing refers to them any more). It costs tens of
// microseconds: the young generation holds little that lives.
//
// Node lets a program start a collection only with --expose-gc. Set at run
// time, the flag gives the function to contexts made afterwards
// (vm.runInNewContext('gc'), as jest-leak-detector does); where that
// fails, the collections stay V8's own.
import v8 from 'node:v8';
import vm from 'node:vm';

/** Dropped native bytes that start a young-generation collection. */
export const SCAVENGE_AFTER_BYTES = 4 * 1024 * 1024;

type Collect = () => void;

/** V8's young-generation collection, or undefined where Node does not give it. */
export function youngCollection(): Collect | undefined {
  try {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as unknown;
    if (typeof gc !== 'function') return undefined;
    return () => (gc as (o: { type: string }) => void)({ type: 'minor' });
  } catch {
    return undefined;
  } finally {
    // Contexts made later get no `gc` (the function taken here keeps working).
    v8.setFlagsFromString('--no-expose-gc');
  }
}

export class Scavenger {
  private pending = 0;
  private scheduled = false;

  constructor(
    private readonly collect: Collect | undefined,
    private readonly later: (f: () => void) => void = (f) => void setImmediate(f),
  ) {}

  /** `bytes` of native memory are no longer referenced. */
  dropped(bytes: number): void {
    const collect = this.collect;
    if (!collect) return;
    this.pending += bytes;
    if (this.pending < SCAVENGE_AFTER_BYTES || this.scheduled) return;
    this.scheduled = true;
    this.later(() => {
      this.scheduled = false;
      this.pending = 0;
      collect();
    });
  }
}
