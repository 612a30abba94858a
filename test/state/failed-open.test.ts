// A start on a full (or otherwise failing) state_dir tries to open the state
// again every STATE_RETRY_MS (agent/state-wait.ts). An open that failed after
// its journal was open left that journal behind: a descriptor per try, and
// its group-commit timer's flush then failed with ENOSPC before anything
// could handle it, which the agent took for a fatal error (exit 1 once space
// returned) instead of the disk_full wait. A failed open closes its journal.
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StateStore } from '../../src/state/store.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

const openFds = async () => (await readdir('/proc/self/fd')).length;

describe('StateStore.open that fails', () => {
  it('leaves no journal open behind, try after try', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-failed-open-'));
    dirs.push(dir);
    // The checkpoint written at load cannot be: its temporary file's name is a directory.
    await mkdir(path.join(dir, 'checkpoint.json.tmp'));
    const errors: unknown[] = [];
    const before = await openFds();
    for (let i = 0; i < 5; i++) {
      const err = await StateStore.open({ stateDir: dir, now: () => Date.now(), onBackgroundError: (e) => void errors.push(e), relocate: async () => new Map() }).then(
        () => null,
        (e: unknown) => e,
      );
      expect((err as NodeJS.ErrnoException | null)?.code).toBe('EISDIR');
    }
    expect(await openFds(), 'no descriptor left per failed open').toBe(before);
    expect(errors).toEqual([]);
  });
});
