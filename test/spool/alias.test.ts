// A symlink to a file the spool also holds under its own name (the usual
// "current.ndjson -> 2026-11-25.ndjson"): one file, read once, at one path.
import { appendFile, rename, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { journalPath, listJournals, readJournal } from '../../src/state/journal.js';
import { setup } from './helpers.js';

/** The paths of the file records journaled so far, in order (a path change is a new record). */
async function fileRecords(s: { store: { flush(): Promise<void> }; stateDir: string }): Promise<string[]> {
  await s.store.flush();
  const out: string[] = [];
  for (const seq of await listJournals(s.stateDir)) {
    for (const r of (await readJournal(journalPath(s.stateDir, seq), false)).records) if (r.t === 'f') out.push(r.path);
  }
  return out;
}

describe('a file the spool lists under two names', () => {
  it('keeps the path it was found at: scans neither move it back and forth nor journal a move each time', async () => {
    const s = await setup();
    await writeFile(path.join(s.spool, 'ev', '2026-11-25.ndjson'), '{"i":1}\n{"i":2}\n');
    await symlink('2026-11-25.ndjson', path.join(s.spool, 'ev', 'current.ndjson'));
    await s.spooler.scan();
    const found = [...s.spooler.files].map((f) => f.path);
    expect(found).toEqual([path.join(s.spool, 'ev', '2026-11-25.ndjson')]);
    const journaled = await fileRecords(s);
    for (let i = 0; i < 4; i++) await s.spooler.scan();
    expect([...s.spooler.files].map((f) => f.path)).toEqual(found);
    expect(await fileRecords(s), 'no path change journaled by the later scans').toEqual(journaled);
    await s.readAll();
    const lines = s.closed.flatMap((b) => b.body.toString().split('\n').filter(Boolean));
    expect(lines).toEqual(['{"i":1}', '{"i":2}']);
  });

  it('is found at its own name even where the link sorts first', async () => {
    // The link's name sorts before the file's: found under the link first
    // and moved to its own name later in the same scan, the file would end
    // each scan at its own name while discovered, journaled and moved back
    // and forth under the link. So the whole history is asserted, not the
    // last path alone.
    const discovered: string[] = [];
    const s = await setup({ onDiscovered: (_ds, p) => discovered.push(p) });
    const own = path.join(s.spool, 'ev', 'b-app.ndjson');
    await writeFile(own, '{"i":1}\n');
    await symlink('b-app.ndjson', path.join(s.spool, 'ev', 'a-current.ndjson'));
    for (let i = 0; i < 3; i++) {
      await s.spooler.scan();
      expect([...s.spooler.files].map((f) => f.path), `after scan ${i + 1}`).toEqual([own]);
    }
    expect(discovered, 'discovered once, at its own name').toEqual([own]);
    expect(await fileRecords(s), 'journaled at its own name, no move journaled').toEqual([own]);
    await s.readAll();
    expect(s.closed.flatMap((b) => b.body.toString().split('\n').filter(Boolean))).toEqual(['{"i":1}']);
  });

  it('the link moved to the next day\'s file: each file is read once, at its own name', async () => {
    const s = await setup();
    const ev = path.join(s.spool, 'ev');
    await writeFile(path.join(ev, 'day1.ndjson'), '{"d":1,"i":1}\n');
    await symlink('day1.ndjson', path.join(ev, 'current.ndjson'));
    await s.spooler.scan();
    await s.readAll();
    // Rotation: a new day's file, the link replaced atomically, a last line in the old file.
    await writeFile(path.join(ev, 'day2.ndjson'), '{"d":2,"i":1}\n');
    await symlink('day2.ndjson', path.join(ev, 'current.tmp'));
    await rename(path.join(ev, 'current.tmp'), path.join(ev, 'current.ndjson'));
    await appendFile(path.join(ev, 'day1.ndjson'), '{"d":1,"i":2}\n');
    await s.spooler.scan();
    await s.spooler.scan();
    await s.readAll();
    expect([...s.spooler.files].map((f) => f.path).sort()).toEqual([path.join(ev, 'day1.ndjson'), path.join(ev, 'day2.ndjson')]);
    const lines = s.closed.flatMap((b) => b.body.toString().split('\n').filter(Boolean));
    expect(lines.sort()).toEqual(['{"d":1,"i":1}', '{"d":1,"i":2}', '{"d":2,"i":1}']);
  });
});
