// A spool of many new files: the spooler reads between the slices of its
// scan, so shipping starts after the first slice instead of after a stat and
// a head read of every file (20,000 files: 5-6 s). A round between slices
// never waits for the pipeline: a full pipeline must not stop the scan from
// finding the rest of the spool.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SCAN_SLICE } from '../../src/spool/discovery.js';
import { waitFor } from '../pipeline/helpers.js';
import { ManualClock } from '../support/manual-clock.js';
import { setup } from './helpers.js';

const FILES = SCAN_SLICE + 100;

const name = (i: number) => `f${String(i).padStart(5, '0')}.ndjson`;

/** FILES files of one line each, in listing order; `empty`: these are empty. */
async function writeFiles(spool: string, empty: number[] = []): Promise<void> {
  for (let from = 0; from < FILES; from += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, FILES - from) }, (_, k) => writeFile(path.join(spool, 'ev', name(from + k)), empty.includes(from + k) ? '' : `{"i":${from + k}}\n`)),
    );
  }
}

describe('the first scan of a large spool', () => {
  it('reads the first slice before the scan has looked at the rest', async () => {
    let followedAtFirstRead: number | null = null;
    const s = await setup({}, { room: { waitForRoom: async () => void (followedAtFirstRead ??= s.spooler.followedCount), hasRoom: true } });
    await writeFiles(s.spool);
    s.spooler.start();
    try {
      await waitFor(() => s.spooler.followedCount === FILES && [...s.spooler.files].every((f) => f.readOffset > 0), 'every file found and read');
      expect(followedAtFirstRead).toBe(SCAN_SLICE);
      s.batcher.closeAll();
      const lines = s.closed.flatMap((b) => b.body.toString().split('\n').filter(Boolean));
      expect(new Set(lines).size).toBe(FILES);
    } finally {
      await s.spooler.close();
    }
  });

  it('is not caught up while the scan has slices to go, though every file found so far is read', async () => {
    // The first file of the second slice is empty: when it is found, the
    // first slice is read and nothing found is behind; the scan is not done.
    const caughtUpAt: boolean[] = [];
    const s = await setup({
      onDiscovered: (_ds, file) => {
        if (file.endsWith(name(SCAN_SLICE))) caughtUpAt.push(s.spooler.caughtUp('ev'));
      },
    });
    await writeFiles(s.spool, [SCAN_SLICE]);
    s.spooler.start();
    try {
      await waitFor(() => s.spooler.followedCount === FILES && s.spooler.caughtUp('ev'), 'every file found and read');
      expect(caughtUpAt).toEqual([false]);
    } finally {
      await s.spooler.close();
    }
  });

  it("paces the next scan by the scan's own time, not by the reading between its slices", async () => {
    // Every read takes 10 ms of the manual clock; a stat takes none. The
    // next scan may start SCAN_GAP_FACTOR x the scan's duration after it:
    // counted with the 10 s of reading in between, a poke would wait ~40 s.
    const clock = new ManualClock();
    const s = await setup({}, { clock, room: { waitForRoom: async () => clock.advance(10), hasRoom: true } });
    let listings = 0;
    s.internals.listCandidates = () => {
      listings++;
      return s.realList();
    };
    await writeFiles(s.spool);
    s.spooler.start();
    try {
      await waitFor(() => s.spooler.followedCount === FILES && s.spooler.caughtUp('ev'), 'every file found and read');
      expect(listings).toBe(1);
      s.spooler.poke();
      await waitFor(() => listings === 2, 'the next scan at once on a poke (the clock does not move)');
    } finally {
      await s.spooler.close();
    }
  });

  it('goes on with the scan while the pipeline has no room, and reads once it has', async () => {
    let room = false;
    let open: () => void = () => undefined;
    const opened = new Promise<void>((resolve) => (open = resolve));
    const s = await setup({}, { room: { get hasRoom() { return room; }, waitForRoom: () => (room ? Promise.resolve() : opened) } });
    await writeFiles(s.spool);
    s.spooler.start();
    try {
      await waitFor(() => s.spooler.followedCount === FILES, 'every file found with the pipeline full');
      expect([...s.spooler.files].filter((f) => f.readOffset > 0)).toEqual([]);
      room = true;
      open();
      await waitFor(() => [...s.spooler.files].every((f) => f.readOffset > 0), 'every file read once there is room');
    } finally {
      await s.spooler.close();
    }
  });
});
