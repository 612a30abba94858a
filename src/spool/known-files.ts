// The files the state knows, by inode (all generations), rebuilt at each
// scan: a path's device and inode find its progress without walking every
// file of the state.
import type { FileProgress } from '../state/progress.js';
import type { StateStore } from '../state/store.js';

export class KnownFiles {
  private byInode = new Map<string, string[]>();

  constructor(private readonly store: StateStore) {}

  rebuild(): void {
    this.byInode = new Map();
    for (const fp of this.store.files()) this.note(fp.meta.key, fp.meta.dev, fp.meta.ino);
  }

  note(key: string, dev: number, ino: number): void {
    const id = `${dev}:${ino}`;
    let list = this.byInode.get(id);
    if (!list) this.byInode.set(id, (list = []));
    list.push(key);
  }

  /** The state's files of this inode (all generations). */
  of(dev: number, ino: number): FileProgress[] {
    const out: FileProgress[] = [];
    for (const key of this.byInode.get(`${dev}:${ino}`) ?? []) {
      const fp = this.store.file(key);
      if (fp) out.push(fp);
    }
    return out;
  }
}
