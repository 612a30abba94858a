// Where inserted rows go. With a data dir, each Data Source is an append-only
// NDJSON file `DIR/<name>.ndjson` (quarantine: `DIR/<name>_quarantine.ndjson`;
// the exceptions are in file-names.ts) holding the exact line bytes received,
// one per line. Without one, rows are only counted (the benchmark sink), and
// this store does nothing.
//
// Invariant: one request's rows for one file are appended with one chain of
// writes that no other request's writes can interleave with, and appends
// happen in the order requests were inserted (a promise chain per file, which
// an evicted file's reopening continues).
//
// Bounded: at most MAX_OPEN_ROW_FILES files are open; the least recently
// written one is closed when another is needed, and reopened on its next write.
// File names come from file-names.ts.
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

export interface RowStore {
  /** False for the count-only sink: callers need not build the bytes. */
  readonly persists: boolean;
  /** Appends `bytes` (whole lines) to `fileName` under the data dir (file-names.ts). Resolves when written. */
  append(fileName: string, bytes: Buffer): Promise<void>;
  close(): Promise<void>;
}

export function createRowStore(dataDir: string | null): RowStore {
  return dataDir === null ? countOnlyStore : new FileRowStore(dataDir);
}

const countOnlyStore: RowStore = {
  persists: false,
  append: async () => {},
  close: async () => {},
};

interface FileSlot {
  handle: Promise<FileHandle>;
  /** Tail of this file's write chain; never rejects (errors go to the caller of append). */
  tail: Promise<void>;
}

/** Row files kept open at once; the least recently written is closed first. */
export const MAX_OPEN_ROW_FILES = 256;

class FileRowStore implements RowStore {
  readonly persists = true;
  readonly #dir: string;
  #closed = false;
  /** Open files, least recently used first (Map keeps insertion order; a use re-inserts). */
  readonly #files = new Map<string, FileSlot>();
  /**
   * Evicted files still finishing their writes and closing. A file reopened
   * meanwhile starts its chain after this, so rows keep request order.
   */
  readonly #closing = new Map<string, Promise<void>>();
  #dirReady: Promise<string | undefined> | null = null;

  constructor(dir: string) {
    this.#dir = dir;
  }

  append(fileName: string, bytes: Buffer): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('the emulator is closed'));
    if (bytes.length === 0) return Promise.resolve();
    const slot = this.#slot(fileName);
    const write = slot.tail.then(async () => writeAll(await slot.handle, bytes));
    slot.tail = write.catch(() => {});
    return write;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const fileName of [...this.#files.keys()]) this.#evict(fileName);
    while (this.#closing.size > 0) await Promise.all(this.#closing.values());
  }

  #slot(fileName: string): FileSlot {
    const slot = this.#files.get(fileName);
    if (slot) {
      this.#files.delete(fileName);
      this.#files.set(fileName, slot);
      return slot;
    }
    this.#dirReady ??= mkdir(this.#dir, { recursive: true });
    const after = this.#closing.get(fileName) ?? Promise.resolve();
    const dirReady = this.#dirReady;
    const handle = after.then(() => dirReady).then(() => open(path.join(this.#dir, fileName), 'a'));
    const created: FileSlot = { handle, tail: after };
    // A failed open is reported by the append that awaits it; later appends retry.
    handle.catch(() => {
      if (this.#files.get(fileName) === created) this.#files.delete(fileName);
    });
    this.#files.set(fileName, created);
    // Thousands of Data Sources must not exhaust the process's descriptors (EMFILE).
    if (this.#files.size > MAX_OPEN_ROW_FILES) this.#evict(this.#files.keys().next().value!);
    return created;
  }

  /** Closes a file once its queued writes are done; no new write can join its chain. */
  #evict(fileName: string): void {
    const slot = this.#files.get(fileName)!;
    this.#files.delete(fileName);
    const done = slot.tail
      .then(() => slot.handle)
      .then((h) => h.close())
      .catch(() => {})
      .finally(() => {
        if (this.#closing.get(fileName) === done) this.#closing.delete(fileName);
      });
    this.#closing.set(fileName, done);
  }
}

async function writeAll(handle: FileHandle, bytes: Buffer): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, offset, bytes.length - offset);
    offset += bytesWritten;
  }
}
