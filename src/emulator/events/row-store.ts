// Where inserted rows go. With a data dir, each Data Source is an append-only
// NDJSON file `DIR/<name>.ndjson` (quarantine: `DIR/<name>_quarantine.ndjson`)
// holding the exact line bytes received, one per line. Without one, rows are
// only counted (the benchmark sink), and this store does nothing.
//
// Invariant: one request's rows for one file are appended with one chain of
// writes that no other request's writes can interleave with, and appends
// happen in the order requests were inserted (a promise chain per file).
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
    if (!slot) {
      this.#dirReady ??= mkdir(this.#dir, { recursive: true });
      const file = path.join(this.#dir, `${name}.ndjson`);
      const handle = this.#dirReady.then(() => open(file, 'a'));
      // A failed open is reported by the append that awaits it; later appends retry.
      handle.catch(() => this.#files.delete(name));
      slot = { handle, tail: Promise.resolve() };
      this.#files.set(name, slot);
    }
    return slot;
  }
}

async function writeAll(handle: FileHandle, bytes: Buffer): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, offset, bytes.length - offset);
    offset += bytesWritten;
  }
}
