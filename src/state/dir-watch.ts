// The agent's claim on its state_dir: the directory and the lock file it
// created. If either is removed or replaced while the agent runs (an operator
// cleaning up, a config management run, a second agent started on a fresh
// state_dir), this agent no longer owns what it writes, and a second agent
// could ship the same files alongside it: report it, so the agent exits.
//
// Checked every STATE_DIR_CHECK_MS on the injected clock: the bound an
// operator sees ("within 5 s") is the check interval plus the close.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Clock } from '../util/clock.js';
import type { LongLived } from '../util/lifecycle.js';
import { LOCK_FILE } from './lock.js';

export const STATE_DIR_CHECK_MS = 1000;

interface Identity {
  dev: number;
  ino: number;
}

export type StateDirLoss = { what: 'state_dir' | 'lock_file'; how: 'removed' | 'replaced'; path: string };

export class StateDirWatch implements LongLived {
  private readonly stop = new AbortController();
  private loop: Promise<void> | null = null;

  private constructor(
    private readonly stateDir: string,
    private readonly dir: Identity,
    private readonly lock: Identity,
    private readonly clock: Clock,
  ) {}

  /** Remember what state_dir and its lock file are now (right after the lock was taken). */
  static async open(stateDir: string, clock: Clock): Promise<StateDirWatch> {
    const [dir, lock] = await Promise.all([fsp.stat(stateDir), fsp.stat(path.join(stateDir, LOCK_FILE))]);
    return new StateDirWatch(stateDir, identity(dir), identity(lock), clock);
  }

  /** Is the state_dir still the one this agent locked? null when it is. */
  async check(): Promise<StateDirLoss | null> {
    const lockPath = path.join(this.stateDir, LOCK_FILE);
    const dir = await statOrNull(this.stateDir);
    if (!dir) return { what: 'state_dir', how: 'removed', path: this.stateDir };
    if (!same(dir, this.dir)) return { what: 'state_dir', how: 'replaced', path: this.stateDir };
    const lock = await statOrNull(lockPath);
    if (!lock) return { what: 'lock_file', how: 'removed', path: lockPath };
    // A lock file deleted and created again often gets the same inode back:
    // its content (the owner's pid) tells them apart.
    if (!same(lock, this.lock) || !(await holdsPid(lockPath, process.pid))) return { what: 'lock_file', how: 'replaced', path: lockPath };
    return null;
  }

  /** Check every STATE_DIR_CHECK_MS until close(); `onLoss` is called once. */
  start(onLoss: (loss: StateDirLoss) => void): void {
    this.loop ??= (async () => {
      while (!this.stop.signal.aborted) {
        await this.clock.sleep(STATE_DIR_CHECK_MS, this.stop.signal);
        if (this.stop.signal.aborted) return;
        const loss = await this.check().catch(() => null);
        if (loss) return onLoss(loss);
      }
    })();
  }

  async close(): Promise<void> {
    this.stop.abort();
    await this.loop;
  }

  destroy(): Promise<void> {
    return this.close();
  }
}

function identity(s: { dev: number; ino: number }): Identity {
  return { dev: s.dev, ino: s.ino };
}

function same(a: Identity, b: Identity): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

async function holdsPid(file: string, pid: number): Promise<boolean> {
  const text = await fsp.readFile(file, 'utf8').catch(() => '');
  return Number.parseInt(text.trim(), 10) === pid;
}

async function statOrNull(p: string): Promise<Identity | null> {
  try {
    return identity(await fsp.stat(p));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw err;
  }
}
