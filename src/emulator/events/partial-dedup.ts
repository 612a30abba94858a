// The platform's deduplication of partially inserted data, for up to 5 hours
// (docs/emulator.md, "Partial inserts and deduplication"). After a
// *failed partial insert* we remember (Data Source, SHA-256 of the decoded
// body) with how many lines were already stored; a byte-identical retry within
// the window stores only the rest. Nothing else is remembered: a retry after a
// success, a reset-after-insert or a GOAWAY stores everything again, because
// the Events API is not idempotent.
//
// Bounded: at most `maxEntries` remembered bodies; the oldest is dropped first.
import { createHash } from 'node:crypto';

export const DEDUP_WINDOW_MS = 5 * 60 * 60 * 1000; // 5 hours
const DEFAULT_MAX_ENTRIES = 10_000;

interface Entry {
  storedLines: number;
  atMs: number;
}

export class PartialInsertMemory {
  readonly #now: () => number;
  readonly #windowMs: number;
  readonly #maxEntries: number;
  /** Insertion order = age order, which makes expiry and eviction cheap. */
  readonly #entries = new Map<string, Entry>();

  constructor(now: () => number, windowMs = DEDUP_WINDOW_MS, maxEntries = DEFAULT_MAX_ENTRIES) {
    this.#now = now;
    this.#windowMs = windowMs;
    this.#maxEntries = maxEntries;
  }

  /** True when hashing a body could find anything (skips SHA-256 on the hot path). */
  get empty(): boolean {
    return this.#entries.size === 0;
  }

  static key(name: string, decodedBody: Buffer): string {
    return `${name}\0${createHash('sha256').update(decodedBody).digest('hex')}`;
  }

  /** Lines of this body already stored by an earlier failed partial insert within the window. */
  storedLines(key: string): number {
    this.#expire();
    return this.#entries.get(key)?.storedLines ?? 0;
  }

  rememberPartial(key: string, storedLines: number): void {
    this.#entries.delete(key);
    this.#entries.set(key, { storedLines, atMs: this.#now() });
    if (this.#entries.size > this.#maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
  }

  /** The body was inserted in full: a later identical request is new data. */
  forget(key: string): void {
    this.#entries.delete(key);
  }

  #expire(): void {
    const oldestAllowed = this.#now() - this.#windowMs;
    for (const [key, entry] of this.#entries) {
      if (entry.atMs >= oldestAllowed) break;
      this.#entries.delete(key);
    }
  }
}
