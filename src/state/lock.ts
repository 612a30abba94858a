// One process owns a state_dir at a time. The lock file holds the owner's pid
// (first line, for messages and `status`) and, on Linux, the boot and the
// process's start time (second line), so that a pid reused after a reboot or
// by another process, or a zombie, is not taken for the owner.
//
// Node has no flock(2), so the file itself is the lock, made race-free:
// - it never exists half-written: the content goes to a file of our own,
//   fsync'd, which is then hard-linked to the lock's name (link(2) fails if
//   the name exists, like O_EXCL). A starter that finds a lock reads a whole
//   one (an empty file read as "stale" let two `dead-letter replay` run);
// - a stale lock (its owner is gone: kill -9, a reboot) is taken over by
//   renaming it aside to a name of our own and checking that what we moved is
//   the very file we judged stale (same inode): if a racing starter took the
//   lock over first, we moved its live lock, so it is put back and we are
//   refused. Two starters judging the same stale lock cannot both win.
// A crash never needs a manual clean-up before the restart.
import { promises as fsp, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { StateLockedError } from '../errors.js';

export const LOCK_FILE = 'spoolship.lock';

export interface StateLock {
  release(): Promise<void>;
}

/** Test seams: the identity written, and a pause between reading a lock and acting on it. */
export interface LockOptions {
  pid?: number;
  /** Called after a held lock was read and judged, before it is taken over (tests interleave starters here). */
  beforeTakeover?: () => Promise<void>;
}

interface Holder {
  pid: number;
  /** `boot <boot_id> start <ticks>`, where /proc has them. */
  stamp: string | null;
}

/**
 * Who a pid is (Linux): `boot <boot_id> start <ticks>` (this boot's id and the
 * process's start time in clock ticks since boot), 'zombie' for a process
 * that ended and was not reaped, null where /proc has no answer (not Linux,
 * or no such process).
 */
export function processStamp(pid: number): string | 'zombie' | null {
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command (which may hold spaces) in parentheses: state is the 3rd, starttime the 22nd.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z' || fields[0] === 'X') return 'zombie';
    return `boot ${boot} start ${fields[19]}`;
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The holder still runs: alive, not a zombie, and the same process (same boot and start time) where that was recorded. */
function holds(h: Holder): boolean {
  if (!alive(h.pid)) return false;
  const now = processStamp(h.pid);
  if (now === 'zombie') return false;
  return h.stamp === null || now === null || now === h.stamp;
}

function parse(text: string): Holder | null {
  const [first, second] = text.split('\n');
  const pid = Number.parseInt((first ?? '').trim(), 10);
  if (!Number.isInteger(pid) || pid <= 0) return null;
  return { pid, stamp: second?.startsWith('boot ') ? second.trim() : null };
}

export async function readLockHolder(stateDir: string): Promise<number | null> {
  try {
    const h = parse(await fsp.readFile(path.join(stateDir, LOCK_FILE), 'utf8'));
    return h && holds(h) ? h.pid : null;
  } catch {
    return null;
  }
}

export async function acquireLock(stateDir: string, opts: LockOptions = {}): Promise<StateLock> {
  const pid = opts.pid ?? process.pid;
  await fsp.mkdir(stateDir, { recursive: true });
  const file = path.join(stateDir, LOCK_FILE);
  const own = `${file}.${pid}.${randomBytes(4).toString('hex')}`;
  const stamp = processStamp(pid);
  const line2 = stamp && stamp !== 'zombie' ? `${stamp}\n` : '';
  const fh = await fsp.open(own, 'wx');
  try {
    await fh.writeFile(`${pid}\n${line2}`);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await fsp.link(own, file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        await takeOverIfStale(file, stateDir, pid, opts);
        continue;
      }
      const { ino, dev } = await fsp.stat(file);
      return {
        release: async () => {
          // Only our own lock file: if state_dir was removed and another agent
          // took a fresh one, its lock is not ours to delete.
          const now = await fsp.stat(file).catch(() => null);
          const holder = parse(await fsp.readFile(file, 'utf8').catch(() => ''));
          if (now && now.ino === ino && now.dev === dev && holder?.pid === pid) await fsp.rm(file, { force: true });
        },
      };
    }
    throw new StateLockedError(stateDir, null);
  } finally {
    await fsp.rm(own, { force: true });
  }
}

/** The lock is held by another live process: refuse. Stale: move it aside, if it is still the one judged. */
async function takeOverIfStale(file: string, stateDir: string, pid: number, opts: LockOptions): Promise<void> {
  const seen = await fsp.stat(file).catch(() => null);
  if (!seen) return; // gone meanwhile: try the link again
  const holder = parse(await fsp.readFile(file, 'utf8').catch(() => ''));
  if (holder && holder.pid !== pid && holds(holder)) throw new StateLockedError(stateDir, holder.pid);
  await opts.beforeTakeover?.();
  const aside = `${file}.stale.${pid}.${randomBytes(4).toString('hex')}`;
  try {
    await fsp.rename(file, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // another starter moved it: try the link again
    throw err;
  }
  const moved = await fsp.stat(aside);
  if (moved.ino === seen.ino && moved.dev === seen.dev) {
    await fsp.rm(aside, { force: true });
    return;
  }
  // A racing starter took the stale lock over first and we moved its live
  // lock: put it back and leave the state_dir to it.
  const theirs = parse(await fsp.readFile(aside, 'utf8').catch(() => ''));
  await fsp.link(aside, file).catch(() => undefined);
  await fsp.rm(aside, { force: true });
  throw new StateLockedError(stateDir, theirs?.pid ?? null);
}
