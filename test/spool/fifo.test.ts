// A FIFO where a spool file was (swapped in between a scan's stat and the
// open) must never block: open(2) of a FIFO waits for a writer, and a
// threadpool thread stuck there once stopped all discovery.
import { execFileSync } from 'node:child_process';
import { openSync, closeSync, constants } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readHead } from '../../src/spool/identity.js';
import { openRegular } from '../../src/spool/open.js';
import { FileTailer } from '../../src/spool/tailer.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

/** A FIFO at `p`; after the test its write end is opened once, so a reader stuck in open(2) (the bug) is let go. */
async function fifoAt(p: string): Promise<void> {
  execFileSync('mkfifo', [p]);
  cleanups.push(async () => {
    try {
      closeSync(openSync(p, constants.O_WRONLY | constants.O_NONBLOCK));
    } catch {
      /* ENXIO: no reader waiting, nothing to release */
    }
  });
}

function within<T>(p: Promise<T>, ms: number): Promise<T | 'blocked'> {
  return Promise.race([p, new Promise<'blocked'>((r) => setTimeout(() => r('blocked'), ms))]);
}

describe('spool files are opened non-blocking, regular files only', () => {
  it('readHead, openRegular and a tailer return at once for a FIFO swapped in place of a file', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-fifo-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const p = path.join(dir, 'app.ndjson');
    await writeFile(p, '{"a":1}\n');
    const st = await stat(p);
    await rm(p);
    await fifoAt(p);
    expect(await within(openRegular(p), 3000)).toBeNull();
    expect(await within(readHead(p, st.dev, st.ino), 3000)).toBeNull();
    const t = new FileTailer('k', 'app', p, 0, st.dev, st.ino, 0, 0, 1_000_000);
    expect(await within(t.ensureOpen(), 3000)).toBeNull();
  });
});
