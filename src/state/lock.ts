// One process owns a state_dir at a time. The lock file holds the owner's
// pid; it is created with O_EXCL, and a lock whose pid is no longer alive
// (the owner was kill -9'd) is taken over, so a crash never needs a manual
// clean-up before the restart.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { StateLockedError } from '../errors.js';

export const LOCK_FILE = 'spoolship.lock';

export interface StateLock {
  release(): Promise<void>;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function readLockHolder(stateDir: string): Promise<number | null> {
  try {
    const pid = Number.parseInt((await fsp.readFile(path.join(stateDir, LOCK_FILE), 'utf8')).trim(), 10);
    return Number.isInteger(pid) && pid > 0 && alive(pid) ? pid : null;
  } catch {
    return null;
  }
}

export async function acquireLock(stateDir: string): Promise<StateLock> {
  await fsp.mkdir(stateDir, { recursive: true });
  const file = path.join(stateDir, LOCK_FILE);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fh = await fsp.open(file, 'wx');
      await fh.writeFile(`${process.pid}\n`);
      await fh.sync();
      const { ino, dev } = await fh.stat();
      await fh.close();
      return {
        release: async () => {
          // Only our own lock file: if state_dir was removed and another agent
          // took a fresh one, its lock is not ours to delete.
          const now = await fsp.stat(file).catch(() => null);
          const holder = await fsp.readFile(file, 'utf8').catch(() => '');
          if (now && now.ino === ino && now.dev === dev && Number.parseInt(holder.trim(), 10) === process.pid) await fsp.rm(file, { force: true });
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = await readLockHolder(stateDir);
      if (holder !== null && holder !== process.pid) throw new StateLockedError(stateDir, holder);
      // Stale lock of a dead process: remove and retry the exclusive create.
      await fsp.rm(file, { force: true });
    }
  }
  throw new StateLockedError(stateDir, null);
}
