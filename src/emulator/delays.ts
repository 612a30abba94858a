// Timers the emulator owns (the `slow` fault), so close() can cancel them:
// a pending delay rejects with EmulatorClosedError and its request is dropped
// instead of touching a closed store.

export class EmulatorClosedError extends Error {
  readonly code = 'SPOOLSHIP_ERR_EMULATOR_CLOSED';
  constructor() {
    super('the emulator is closed');
  }
}

interface Pending {
  timer: NodeJS.Timeout;
  reject: (err: Error) => void;
}

export class Delays {
  readonly #pending = new Set<Pending>();
  #closed = false;

  delay(delayMs: number): Promise<void> {
    if (this.#closed) return Promise.reject(new EmulatorClosedError());
    return new Promise((resolve, reject) => {
      const entry: Pending = {
        timer: setTimeout(() => {
          this.#pending.delete(entry);
          resolve();
        }, delayMs),
        reject,
      };
      this.#pending.add(entry);
    });
  }

  close(): void {
    this.#closed = true;
    for (const entry of this.#pending) {
      clearTimeout(entry.timer);
      entry.reject(new EmulatorClosedError());
    }
    this.#pending.clear();
  }
}
