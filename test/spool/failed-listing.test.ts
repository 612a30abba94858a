// A directory listing that fails (EMFILE with every descriptor in use, EIO,
// NFS's ESTALE) says nothing about the files in it: it is a WARN and
// changes nothing. Taking the empty answer for "every file gone" detached
// them all: the writer's partial line was sent whole, and the next sighting
// read each file again from 0 as a new one.
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { listFiles } from '../../src/spool/walk.js';
import { setup } from './helpers.js';

function errno(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: test`), { code });
}

describe('a failed directory listing', () => {
  it('listFiles names the directories it could not list, and lists the others', async () => {
    const { spool } = await setup();
    await mkdir(path.join(spool, 'other'), { recursive: true });
    await writeFile(path.join(spool, 'ev', 'a.ndjson'), '{}\n');
    await writeFile(path.join(spool, 'other', 'b.ndjson'), '{}\n');
    const failing = path.join(spool, 'ev');
    const { promises: fsp } = await import('node:fs');
    const readdir = (async (dir: string, opts: unknown) => {
      if (dir === failing) throw errno('EMFILE');
      return fsp.readdir(dir, opts as { withFileTypes: true });
    }) as typeof fsp.readdir;
    const listed = await listFiles([{ dir: spool, depth: 2 }], readdir);
    expect(listed.paths).toEqual([path.join(spool, 'other', 'b.ndjson')]);
    expect(listed.failed).toEqual([{ dir: failing, code: 'EMFILE' }]);
    // A directory that no longer exists is no failure: its files are gone.
    const gone = await listFiles([{ dir: path.join(spool, 'nope'), depth: 1 }]);
    expect(gone.failed).toEqual([]);
  });

  it('keeps following the files under it: no detach, no partial line sent, no second reading from 0', async () => {
    const failures: Array<{ dir: string; code: string }> = [];
    const { spool, spooler, internals, readAll, realList, closed } = await setup({ onListFailed: (dir, code) => failures.push({ dir, code }) });
    const file = path.join(spool, 'ev', 'app.ndjson');
    await writeFile(file, '{"n":1}\n{"n":2}\n{"half":');
    await spooler.scan();
    await readAll();
    // Every descriptor in use: the Data Source's directory cannot be listed.
    internals.listCandidates = async () => ({ ...(await realList()), paths: [], failed: [{ dir: path.join(spool, 'ev'), code: 'EMFILE' }] });
    await spooler.scan();
    await readAll();
    await spooler.scan();
    expect([...spooler.files].map((t) => ({ detached: t.detached, finished: t.finished }))).toEqual([{ detached: false, finished: false }]);
    expect(failures, 'one WARN per failing streak').toEqual([{ dir: path.join(spool, 'ev'), code: 'EMFILE' }]);
    // The listing works again; the writer finishes its line.
    internals.listCandidates = realList;
    await appendFile(file, '3}\n{"n":4}\n');
    await spooler.scan();
    await readAll();
    expect(closed.map((b) => b.body.toString()).join('')).toBe('{"n":1}\n{"n":2}\n{"half":3}\n{"n":4}\n');
    expect([...spooler.files].map((t) => t.key.split(':')[2]), 'the same generation: never read again from 0').toEqual(['0']);
  });
});
