// util/fsx.ts atomicWrite on a full disk (a real tmpfs): the write fails
// (ENOSPC, the disk_full state, tried again later) and leaves nothing behind.
// Its half-written `.tmp` stayed, and held space the journal and the disk
// queue's acknowledgements needed to get out of the full disk (an audit saw
// an 86 KB checkpoint.json.tmp on a 1 MiB state_dir).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { atomicWrite } from '../../src/util/fsx.js';
import { mountTmpfs } from '../support/tmpfs.js';

describe('atomicWrite on a full disk', () => {
  it('fails with ENOSPC, keeps the old version, and leaves no .tmp behind', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-atomic-'));
    const unmount = mountTmpfs(dir, '256k');
    try {
      const file = path.join(dir, 'checkpoint.json');
      writeFileSync(file, 'old');
      await expect(atomicWrite(file, 'x'.repeat(400 * 1024))).rejects.toMatchObject({ code: 'ENOSPC' });
      expect(existsSync(`${file}.tmp`)).toBe(false);
      expect(readFileSync(file, 'utf8')).toBe('old');
    } finally {
      unmount();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
