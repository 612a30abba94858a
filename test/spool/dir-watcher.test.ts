// The directory watch follows the directories each scan lists: a change of a
// file in one of them pokes the scan; a directory no longer listed is let go.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DirWatcher } from '../../src/spool/dir-watcher.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function events(): { watcher: DirWatcher; count: () => number; next: () => Promise<void> } {
  let n = 0;
  let wake: (() => void) | null = null;
  const watcher = new DirWatcher(() => {
    n++;
    wake?.();
  });
  return { watcher, count: () => n, next: () => new Promise<void>((r) => (wake = r)) };
}

describe('DirWatcher', () => {
  it('pokes on a file created or written in a listed directory; a directory no longer listed is let go', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'spoolship-dw-'));
    dirs.push(root);
    const a = path.join(root, 'a');
    const b = path.join(root, 'b');
    mkdirSync(a);
    mkdirSync(b);
    const { watcher, count, next } = events();
    try {
      watcher.sync([a, b]);
      expect(watcher.complete).toBe(true);
      let poked = next();
      writeFileSync(path.join(a, 'x.ndjson'), '{}\n');
      await poked;
      poked = next();
      writeFileSync(path.join(b, 'y.ndjson'), '{}\n');
      await poked;
      // b no longer listed: its changes poke nothing. Proof by a second
      // watch on a, written after b: inotify (one queue per process) tells
      // of b's change first, had anyone still watched it.
      watcher.sync([a]);
      const sentinel = events();
      sentinel.watcher.sync([a]);
      try {
        const before = count();
        writeFileSync(path.join(b, 'z.ndjson'), '{}\n');
        const seen = sentinel.next();
        writeFileSync(path.join(a, 'w.ndjson'), '{}\n');
        await seen;
        await new Promise((r) => setImmediate(r));
        expect(count()).toBeGreaterThan(before); // a's change, through the first watcher too
        watcher.sync([]);
        const after = count();
        writeFileSync(path.join(b, 'v.ndjson'), '{}\n');
        writeFileSync(path.join(a, 'u.ndjson'), '{}\n');
        const seen2 = sentinel.next();
        writeFileSync(path.join(a, 't.ndjson'), '{}\n');
        await seen2;
        await new Promise((r) => setImmediate(r));
        expect(count()).toBe(after);
      } finally {
        sentinel.watcher.close();
      }
    } finally {
      watcher.close();
    }
  });

  it('a directory that cannot be watched leaves the watch incomplete (the rescan stays), and is tried again at the next sync', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'spoolship-dw-'));
    dirs.push(root);
    const later = path.join(root, 'later');
    const { watcher } = events();
    try {
      watcher.sync([root, later]);
      expect(watcher.complete).toBe(false);
      mkdirSync(later);
      watcher.sync([root, later]);
      expect(watcher.complete).toBe(true);
    } finally {
      watcher.close();
    }
  });
});
