// At start-up, files the state knows that no pattern matches any more
// (renamed out of the patterns while being read) are read on from where they
// were (discovery.ts adoptUnmatched), but only when the file at the recorded
// path is still the one recorded: device, inode and first bytes. An inode
// reused by a new file while the agent was down was resumed at the old
// offset, reading the new file's lines from the middle.
import { stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fileKey, fingerprintOf } from '../../src/spool/identity.js';
import { setup } from './helpers.js';

describe('adopting files out of the patterns at start-up', () => {
  const recorded = Buffer.from('{"old":1}\n{"old":2}\n');

  async function known(content: string) {
    const s = await setup();
    const p = path.join(s.spool, 'ev', 'app.ndjson.1');
    await writeFile(p, content);
    const st = await stat(p);
    const f = fingerprintOf(recorded);
    s.store.trackFile({ key: fileKey(st.dev, st.ino, 0), dev: st.dev, ino: st.ino, gen: 0, fp: f.fp, fpLen: f.fpLen, path: p, ds: 'ev' }, 10);
    await s.spooler.scan();
    await s.readAll();
    return s;
  }

  it('reads on a file that still starts with its fingerprint', async () => {
    const s = await known('{"old":1}\n{"old":2}\n{"old":3}\n');
    expect(s.closed.map((b) => b.body.toString()).join('')).toBe('{"old":2}\n{"old":3}\n');
  });

  it('leaves alone a file under the same inode that starts with other bytes', async () => {
    const s = await known('{"new":1}\n{"new":2}\n{"new":3}\n');
    expect([...s.spooler.files], 'not adopted').toEqual([]);
    expect(s.closed, 'nothing read from the middle of another file').toEqual([]);
  });
});
