// The parts an agent start has brought up, in the order it brought them up,
// so that a start failing part-way releases exactly those, last first:
// nothing of the attempt stays behind (a Redis connection, the queue
// replayer, the HTTP client, a token watcher, the state_dir lock). A failed
// SIGHUP reload and the in-process tests depend on it; `run` exits anyway.
// The graceful stop (agent/stop.ts) has its own order on the clock, bounded by
// shutdown_timeout_ms (README "Delivery guarantee").

export interface StartedPart {
  name: string;
  release: () => unknown;
}

export class StartedParts {
  private readonly stack: StartedPart[] = [];

  /** `release` undoes the part's start (close, stop, destroy); it is called once, at most. */
  add(name: string, release: () => unknown): void {
    this.stack.push({ name, release });
  }

  get names(): string[] {
    return this.stack.map((p) => p.name);
  }

  /** Release every part, last started first; one failing does not stop the others. Returns the failures. */
  async unwind(): Promise<Array<{ name: string; err: unknown }>> {
    const failures: Array<{ name: string; err: unknown }> = [];
    for (let part = this.stack.pop(); part; part = this.stack.pop()) {
      try {
        await part.release();
      } catch (err) {
        failures.push({ name: part.name, err });
      }
    }
    return failures;
  }
}
