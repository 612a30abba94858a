// Who waits for the pipeline's room (the reader, the start's re-sending):
// woken all at once when the room may have grown a lot (a park moved, a
// compression ended), one at a time as batches end. A wait that ends by its
// signal (a scan is due: spool/spooler.ts) leaves the list at once: left in
// it, a batch's end woke it instead of the reader, and with a few of them
// the reader waited for good.
export class RoomWaiters {
  private waiting: Array<() => void> = [];

  /** Until woken, or until `signal` aborts. */
  wait(signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        signal?.removeEventListener('abort', done);
        const i = this.waiting.indexOf(done);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve();
      };
      this.waiting.push(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  wakeAll(): void {
    for (const w of this.waiting.splice(0)) w();
  }

  /** The longest waiting one. */
  wakeOne(): void {
    this.waiting.shift()?.();
  }

  get size(): number {
    return this.waiting.length;
  }
}
