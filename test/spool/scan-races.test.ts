// Races between a scan's directory listing and what it then finds on disk.
// The spooler is driven directly (no timers, no watcher): scan() and the
// listing are called by the test, so each interleaving is exact.
import { appendFile, rename, writeFile } from 'node:fs/promises';
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

  it('a finished file seen again with other first bytes (an inode reused by a new file) becomes a new generation, never the old progress again', async () => {
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
    // Its descriptor is closed, so its inode may be reused: other first bytes
    // under it are a new file (written in place here, to keep the inode).
    await writeFile(`${live}.old`, '{"m":1}\n{"m":2}\n');
    await rename(`${live}.old`, path.join(spool, 'ev', 'app.2.ndjson'));
    await spooler.scan();
    const keys = [...spooler.files].map((t) => [t.key.split(':')[2], t.finished, t.readOffset]);
    expect(keys).toEqual([
      ['0', true, 8],
      ['1', false, 0],
    ]);
  });

  it('a finished file back in the patterns within forget_after_ms, with the same first bytes, reads on where it was', async () => {
    const { spool, spooler, readAll, internals, closed } = await setup({}, { idleMs: 0 });
    const live = path.join(spool, 'ev', 'app.ndjson');
    await writeFile(live, '{"n":1}\n');
    await spooler.scan();
    await readAll();
    await rename(live, `${live}.old`);
    await spooler.scan();
    await readAll();
    await internals.readRound();
    expect([...spooler.files][0]!.finished).toBe(true);
    // Moved back (and written on) before forget_after_ms: the same file.
    await rename(`${live}.old`, live);
    await appendFile(live, '{"n":2}\n');
    await spooler.scan();
    await readAll();
    expect([...spooler.files].map((t) => [t.key.split(':')[2], t.finished, t.readOffset])).toEqual([['0', false, 16]]);
    expect(closed.map((b) => b.body.toString()).join(''), 'no line read twice').toBe('{"n":1}\n{"n":2}\n');
  });
});
