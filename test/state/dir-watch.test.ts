import { mkdtemp, rename, rm, mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StateDirWatch, STATE_DIR_CHECK_MS, type StateDirLoss } from '../../src/state/dir-watch.js';
import { acquireLock, LOCK_FILE } from '../../src/state/lock.js';
import { ManualClock } from '../support/manual-clock.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

async function watched(): Promise<{ stateDir: string; clock: ManualClock; losses: StateDirLoss[]; watch: StateDirWatch }> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'spoolship-dirwatch-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  const stateDir = path.join(root, 'state');
  const lock = await acquireLock(stateDir);
  cleanups.push(() => lock.release());
  const clock = new ManualClock();
  const watch = await StateDirWatch.open(stateDir, clock);
  cleanups.push(() => watch.close());
  const losses: StateDirLoss[] = [];
  watch.start((l) => losses.push(l));
  return { stateDir, clock, losses, watch };
}

async function tick(w: { clock: ManualClock; losses: StateDirLoss[] }, until: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !until(); i++) {
    await new Promise((r) => setTimeout(r, 5));
    if (w.clock.waiting > 0) w.clock.advance(STATE_DIR_CHECK_MS);
  }
}

describe('StateDirWatch', () => {
  it('reports a removed state_dir within one check interval', async () => {
    const w = await watched();
    await tick(w, () => w.clock.waiting > 0);
    expect(w.losses).toEqual([]);
    await rm(w.stateDir, { recursive: true });
    w.clock.advance(STATE_DIR_CHECK_MS);
    await tick(w, () => w.losses.length > 0);
    expect(w.losses).toEqual([{ what: 'state_dir', how: 'removed', path: w.stateDir }]);
    expect(STATE_DIR_CHECK_MS).toBeLessThanOrEqual(5000);
  });

  it('reports a state_dir replaced by another directory, and a lock file removed or replaced', async () => {
    const a = await watched();
    await rename(a.stateDir, `${a.stateDir}.old`);
    await mkdir(a.stateDir);
    await writeFile(path.join(a.stateDir, LOCK_FILE), '1\n');
    await tick(a, () => a.losses.length > 0);
    expect(a.losses).toEqual([{ what: 'state_dir', how: 'replaced', path: a.stateDir }]);

    const b = await watched();
    await rm(path.join(b.stateDir, LOCK_FILE));
    await tick(b, () => b.losses.length > 0);
    expect(b.losses[0]).toMatchObject({ what: 'lock_file', how: 'removed' });

    const c = await watched();
    const lock = path.join(c.stateDir, LOCK_FILE);
    await writeFile(`${lock}.new`, '999\n');
    await rename(`${lock}.new`, lock);
    await tick(c, () => c.losses.length > 0);
    expect(c.losses[0]).toMatchObject({ what: 'lock_file', how: 'replaced' });
  });

  it('releasing the lock leaves another agent\'s lock file alone', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'spoolship-dirwatch-'));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    const stateDir = path.join(root, 'state');
    const lock = await acquireLock(stateDir);
    await rm(stateDir, { recursive: true });
    await mkdir(stateDir);
    await writeFile(path.join(stateDir, LOCK_FILE), '999999\n');
    await lock.release();
    const { readFile } = await import('node:fs/promises');
    expect(await readFile(path.join(stateDir, LOCK_FILE), 'utf8')).toBe('999999\n');
  });
});
