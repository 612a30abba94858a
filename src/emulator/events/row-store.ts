// Where inserted rows go. With a data dir, each Data Source is an append-only
// NDJSON file `DIR/<name>.ndjson` (quarantine: `DIR/<name>_quarantine.ndjson`)
// holding the exact line bytes received, one per line. Without one, rows are
// only counted (the benchmark sink), and this store does nothing.
//
// Invariant: one request's rows for one file are appended with one chain of
// writes that no other request's writes can interleave with, and appends
// happen in the order requests were inserted (a promise chain per file).
import { createHash } from 'node:crypto';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

export interface RowStore {
  /** False for the count-only sink: callers need not build the bytes. */
  readonly persists: boolean;
  /** Appends `bytes` (whole lines) to Data Source `name`'s file. Resolves when written. */
  append(name: string, bytes: Buffer): Promise<void>;
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

/**
 * Row files kept open at once. One descriptor per Data Source name ran the
 * emulator out of descriptors at ~1,000 names; past this the least recently
 * used file is closed (after its pending writes) and opened again on its
 * next append.
 */
export const MAX_OPEN_ROW_FILES = 128;

interface FileSlot {
  handle: Promise<FileHandle>;
  /** Tail of this file's write chain; never rejects (errors go to the caller of append). */
  tail: Promise<void>;
}

class FileRowStore implements RowStore {
  readonly persists = true;
  readonly #dir: string;
  #closed = false;
  readonly #files = new Map<string, FileSlot>();
  /** Files closed to make room, until their last writes are done. */
  readonly #closing = new Map<string, Promise<void>>();
  #dirReady: Promise<string | undefined> | null = null;

  constructor(dir: string) {
    this.#dir = dir;
  }

  append(name: string, bytes: Buffer): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('the emulator is closed'));
    if (bytes.length === 0) return Promise.resolve();
    const slot = this.#slot(name);
    const write = slot.tail.then(async () => writeAll(await slot.handle, bytes));
    slot.tail = write.catch(() => {});
    return write;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.#closing.values());
    const slots = [...this.#files.values()];
    this.#files.clear();
    await Promise.all(
      slots.map(async (slot) => {
        await slot.tail;
        const handle = await slot.handle.catch(() => null);
        await handle?.close();
      }),
    );
  }

  #slot(name: string): FileSlot {
    let slot = this.#files.get(name);
    if (slot) {
      // Most recently used last (Map order is insertion order).
      this.#files.delete(name);
      this.#files.set(name, slot);
      return slot;
    }
    this.#dirReady ??= mkdir(this.#dir, { recursive: true });
    const file = path.join(this.#dir, rowFileName(name));
    // A file closed for room may still be writing: this slot's writes start after those.
    const after = this.#closing.get(name) ?? Promise.resolve();
    const handle = Promise.all([this.#dirReady, after]).then(() => open(file, 'a'));
    // A failed open is reported by the append that awaits it; later appends retry.
    handle.catch(() => {
      if (this.#files.get(name) === slot) this.#files.delete(name);
    });
    slot = { handle, tail: after };
    this.#files.set(name, slot);
    if (this.#files.size > MAX_OPEN_ROW_FILES) this.#evictOldest();
    return slot;
  }

  #evictOldest(): void {
    const [name, old] = this.#files.entries().next().value as [string, FileSlot];
    this.#files.delete(name);
    const closed = old.tail.then(async () => {
      const h = await old.handle.catch(() => null);
      await h?.close().catch(() => undefined);
    });
    this.#closing.set(name, closed);
    void closed.then(() => {
      if (this.#closing.get(name) === closed) this.#closing.delete(name);
    });
  }

  /** Files open right now (tests check the bound). */
  get openFiles(): number {
    return this.#files.size;
  }
}

/** A file name is at most 255 bytes. */
const MAX_FILE_NAME = 255;

/**
 * `<name>.ndjson`, or for a name too long for that (a Data Source name may
 * have 255 characters, and its quarantine adds 11): its first 200
 * characters, `~`, and 16 hex digits of its SHA-256 (docs/emulator.md).
 */
export function rowFileName(name: string): string {
  const plain = `${name}.ndjson`;
  if (Buffer.byteLength(plain) <= MAX_FILE_NAME) return plain;
  return `${name.slice(0, 200)}~${createHash('sha256').update(name).digest('hex').slice(0, 16)}.ndjson`;
}

async function writeAll(handle: FileHandle, bytes: Buffer): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, offset, bytes.length - offset);
    offset += bytesWritten;
  }
}
