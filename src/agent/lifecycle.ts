// The parts an agent start has brought up, in the order it brought them up
// (each a LongLived: src/util/lifecycle.ts), so that they end last first:
// - a start failing part-way destroys exactly those, with its error: nothing
//   of the attempt stays behind (a Redis connection, the queue replayer, the
//   HTTP client, a token watcher, the state_dir lock);
// - a fatal error destroys them all, writing no more state;
// - a graceful stop first drains in its own order on the clock
//   (agent/stop.ts, bounded by shutdown_timeout_ms), then closes the stack:
//   parts it closed already return at once (close() is idempotent).
import type { LongLived } from '../util/lifecycle.js';

export interface StartedPart {
  name: string;
  part: LongLived;
}

export type Unwind = 'close' | { destroy: unknown };

export class StartedParts {
  private readonly stack: StartedPart[] = [];

  add(name: string, part: LongLived): void {
    this.stack.push({ name, part });
  }

  get names(): string[] {
    return this.stack.map((p) => p.name);
  }

  /** How many parts are up: unwind(how, keep) ends those started after. */
  get size(): number {
    return this.stack.length;
  }

  /**
   * End every part started after the first `keep` (all by default), last
   * started first, each once; one failing does not stop the others. Returns
   * the failures.
   */
  async unwind(how: Unwind, keep = 0): Promise<Array<{ name: string; err: unknown }>> {
    const failures: Array<{ name: string; err: unknown }> = [];
    while (this.stack.length > keep) {
      const p = this.stack.pop()!;
      try {
        await (how === 'close' ? p.part.close() : p.part.destroy(how.destroy));
      } catch (err) {
        failures.push({ name: p.name, err });
      }
    }
    return failures;
  }
}

/** A part made of plain functions (a lock, the timers, parts that must end together); destroying it closes it unless told otherwise. */
export function partOf(close: () => unknown, destroy: (err: unknown) => unknown = close): LongLived {
  return {
    close: async () => void (await close()),
    destroy: async (err) => void (await destroy(err)),
  };
}
