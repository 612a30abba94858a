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
// Spilled bodies (pipeline/held-bodies.ts) are read back in 64 KiB steps for
// every attempt, and a step lives until the socket has taken it: with dozens
// of requests in flight the server reads slowly, some steps survive two young
// collections and are promoted, and V8 frees those only at a full
// collection, which it starts once ~64 MB of external memory has grown
// (bench/README.md finding 36: external memory 50 -> 73 MB and RSS 137 ->
// 183 MB before one came, 3 GB shipped against 2 s answers). The pipeline
// says which bytes were sent that way. While such steps are being dropped,
// the collection is a full one once external memory has grown by
// MAJOR_AFTER_GROWTH_BYTES since the last full one (3-30 ms on the agent's
// small heap; one after every 16 MiB sent cost 7-15 % of the throughput at
// 1 s answers, so only when the memory is there). Never at loopback speed,
// where nothing is spilled.
//
// Node lets a program start a collection only with --expose-gc. Set at run
// time, the flag gives the function to contexts made afterwards
// (vm.runInNewContext('gc'), as jest-leak-detector does); where that
// fails, the collections stay V8's own.
import v8 from 'node:v8';
import vm from 'node:vm';

/** Dropped native bytes that start a young-generation collection. */
export const SCAVENGE_AFTER_BYTES = 4 * 1024 * 1024;
/** Growth of external memory since the last full collection that, while sent steps are dropped, makes the next collection a full one. */
export const MAJOR_AFTER_GROWTH_BYTES = 16 * 1024 * 1024;

/** External memory (ArrayBuffers and other native memory V8 is told of), cheaply. */
function externalMemory(): number {
  return (v8.getHeapStatistics() as { external_memory?: number }).external_memory ?? process.memoryUsage().external;
}

/**
 * How dropped bytes were used: `copied`, a codec's output copied into the
 * pool at once (dies young); `sent`, a step of a spilled body that lived
 * until the socket took it (may have been promoted).
 */
export type DroppedHow = 'copied' | 'sent';

/** Told of compressed bodies' native memory no longer referenced (pipeline/held-bodies.ts, sender/body.ts); Scavenger implements it. */
export interface BodyDrops {
  dropped(bytes: number, how: DroppedHow): void;
}

type Collect = (type: 'minor' | 'major') => void;

/** V8's collections (young generation, or full), or undefined where Node does not give them. */
export function collections(): Collect | undefined {
  try {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as unknown;
    if (typeof gc !== 'function') return undefined;
    const run = gc as (o?: { type: 'minor' }) => void;
    // A full collection is gc() without options: Node 20's V8 takes {type: 'major'} for a young one.
    return (type) => (type === 'major' ? run() : run({ type: 'minor' }));
  } catch {
    return undefined;
  } finally {
    // Contexts made later get no `gc` (the function taken here keeps working).
    v8.setFlagsFromString('--no-expose-gc');
  }
}

export class Scavenger implements BodyDrops {
  private pending = 0;
  private sent = false;
  private scheduled = false;
  /** External memory after the last full collection (or when first measured). */
  private base: number | null = null;

  constructor(
    private readonly collect: Collect | undefined,
    private readonly later: (f: () => void) => void = (f) => void setImmediate(f),
    private readonly external: () => number = externalMemory,
  ) {}

  /** `bytes` of native memory are no longer referenced. */
  dropped(bytes: number, how: DroppedHow = 'copied'): void {
    const collect = this.collect;
    if (!collect) return;
    this.pending += bytes;
    if (how === 'sent') this.sent = true;
    if (this.pending < SCAVENGE_AFTER_BYTES || this.scheduled) return;
    this.scheduled = true;
    this.later(() => {
      this.scheduled = false;
      this.pending = 0;
      const sent = this.sent;
      this.sent = false;
      if (!sent) return collect('minor');
      const now = this.external();
      this.base ??= now;
      if (now - this.base < MAJOR_AFTER_GROWTH_BYTES) {
        this.base = Math.min(this.base, now);
        return collect('minor');
      }
      collect('major');
      this.base = this.external();
    });
  }
}
