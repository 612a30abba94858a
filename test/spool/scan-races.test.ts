// Races between a scan's directory listing and what it then finds on disk.
// The spooler is driven directly (no timers, no watcher): scan() and the
// listing are called by the test, so each interleaving is exact.
import { rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

describe('scan races', () => {
  it('a file rotated within the patterns between the listing and its stat is followed, not read again', async () => {
    const { spool, spooler, internals, realList, readAll, closed } = await setup();
    const live = path.join(spool, 'ev', 'app.ndjson');
    const rotated = path.join(spool, 'ev', 'app.1.ndjson');
    await writeFile(live, '{"n":1}\n{"n":2}\n');
    await spooler.scan();
    await readAll();
    // The listing still names app.ndjson; by the time of its stat it is app.1.ndjson.
    const stale = await realList();
    await rename(live, rotated);
    internals.listCandidates = async () => stale;
    await spooler.scan();
    const t = [...spooler.files][0]!;
    expect({ path: t.path, detached: t.detached }).toEqual({ path: rotated, detached: false });
    internals.listCandidates = realList;
    await readAll(); // a detached file would be finished here
    await spooler.scan();
    await readAll();
    expect(closed.map((b) => b.body.toString()).join('')).toBe('{"n":1}\n{"n":2}\n');
    expect([...spooler.files].length).toBe(1);
  });

  it('a finished file whose inode is seen again becomes a new generation, never the old progress again', async () => {
    // idle_ms 0: a file renamed away is finished at the first round after its end.
    const { spool, spooler, readAll, internals } = await setup({}, { idleMs: 0 });
    const live = path.join(spool, 'ev', 'app.ndjson');
    await writeFile(live, '{"n":1}\n');
    await spooler.scan();
    await readAll();
    await rename(live, `${live}.old`); // out of the patterns: read to its end, then (idle) finished
    await spooler.scan();
    await readAll();
    await internals.readRound();
    const old = [...spooler.files][0]!;
    expect(old.finished).toBe(true);
    // Back in the patterns before its batch was acknowledged (or a new file
    // under the reused inode: the two look alike once the descriptor is closed).
    await rename(`${live}.old`, path.join(spool, 'ev', 'app.2.ndjson'));
    await spooler.scan();
    const keys = [...spooler.files].map((t) => [t.key.split(':')[2], t.finished, t.readOffset]);
    expect(keys).toEqual([
      ['0', true, 8],
      ['1', false, 0],
    ]);
  });
});
