// The one lifecycle of a long-lived part (docs/architecture.md "Lifecycles").
// A part is started by whoever built it (`start()`, or a static `open()` for
// the parts that must read the disk first) and ends in one of two ways:
//
// - `close()`: finish what is under way and release what the part holds
//   (files, sockets, timers). It may wait for other parts (the replayer's
//   deliveries end when the sender closes); the caller bounds it with its
//   own deadline. Idempotent.
// - `destroy(err)`: stop at once, abandoning what is under way and writing
//   nothing more (a fatal error, a deadline passed); what was abandoned is
//   recovered from the disk at the next start. Idempotent.
//
// A part with nothing to abandon (a timer, a watcher) destroys by closing.

export interface LongLived {
  close(): Promise<void>;
  destroy(err?: unknown): Promise<void>;
}

/** What a destroyed part's pending work ends with (a state write retrying on a full disk): not a fault of its own. */
export class DestroyedError extends Error {
  constructor(what: string) {
    super(`${what} was destroyed`);
    this.name = 'DestroyedError';
  }
}
