// One process owns a state_dir at a time, by two locks taken in this order:
//
// 1. The kernel's: an exclusive flock(2) on the directory itself, held by a
//    child `flock` program (flock.ts). The kernel lets it go with the process
//    that holds it, kill -9 and a reboot included, and no two processes ever
//    hold it at once: it is what makes starters racing for the state_dir safe.
//    Held by another: refused at once when the lock file below names a live
//    owner; otherwise the holder is an agent that has just died, whose flock
//    child is still letting go (a supervisor's restart right after a kill -9),
//    or a starter between its flock and its lock file, so we wait for it,
//    at most FLOCK_WAIT_MS, before we refuse.
// 2. The lock file, `spoolship.lock`, taken under the kernel's lock. It holds
//    the owner's pid (first line, for messages and `status`) and, on Linux,
//    the boot and the process's start time (second line), so that a pid
//    reused after a reboot or by another process, or a zombie, is not taken
//    for the owner. Where there is no usable flock program (not installed, a
//    file system without flock(2)) it is the only lock, with one WARN at
//    start; and it keeps an agent that has the kernel's lock from starting
//    next to one that has only this one.
//
// The lock file is made race-free without flock(2):
// - it never exists half-written: the content goes to a file of our own,
//   fsync'd, which is then hard-linked to the lock's name (link(2) fails if
//   the name exists, like O_EXCL). A starter that finds a lock reads a whole
//   one (an empty file read as "stale" let two `dead-letter replay` run);
// - a stale lock (its owner is gone: kill -9, a reboot) is taken over by
//   renaming it aside to a name of our own and checking that what we moved is
//   the very file we judged stale (same inode): if a racing starter took the
//   lock over first, we moved its live lock, so it is put back and we are
//   refused. Two starters judging the same stale lock cannot both win.
//   A third one linking its own lock in the instant the moved live lock is
//   put back can: only the kernel's lock closes that, so without flock the
//   lock file alone leaves that race open.
// A crash never needs a manual clean-up before the restart.
import { promises as fsp, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { StateLockedError } from '../errors.js';
import { takeFlock, type KernelLock } from './flock.js';

export const LOCK_FILE = 'spoolship.lock';
/**
 * How long a starter waits for a kernel lock held with no live owner named in
 * the lock file: a killed agent's flock child ends as soon as it reads EOF,
 * in milliseconds; this bound covers a loaded machine, and a second agent
 * racing the same start is refused after it.
 */
export const FLOCK_WAIT_MS = 5000;

export interface StateLock {
  /** 'flock': both locks; 'lock_file': the lock file alone (no usable flock program). */
  readonly by: 'flock' | 'lock_file';
  release(): Promise<void>;
}

/** What the lock tells operators (observe/state-events.ts words it). */
export type LockEvent =
  | { kind: 'fallback'; reason: 'flock_missing' | 'flock_failed'; detail: string }
  | { kind: 'waiting'; waitMs: number }
  | { kind: 'lost'; detail: string };

export interface LockOptions {
  /** Test seam: the identity written. */
  pid?: number;
  /** Test seam: called after a held lock file was read and judged, before it is taken over (tests interleave starters here). */
  beforeTakeover?: () => Promise<void>;
  /** The flock program, looked up on PATH; default 'flock' (tests name one that does not exist). */
  flockProgram?: string;
  /** Default FLOCK_WAIT_MS. */
  flockWaitMs?: number;
  onEvent?: (e: LockEvent) => void;
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
  await fsp.mkdir(stateDir, { recursive: true });
  const kernel = await takeKernelLock(stateDir, opts);
  let file: { release(): Promise<void> };
  try {
    file = await acquireLockFile(stateDir, opts);
  } catch (err) {
    await kernel?.release();
    throw err;
  }
  kernel?.onLost((detail) => opts.onEvent?.({ kind: 'lost', detail }));
  return {
    by: kernel ? 'flock' : 'lock_file',
    release: async () => {
      // The file first: a starter that gets the kernel's lock next must not
      // find our pid, alive, in the lock file and be refused.
      try {
        await file.release();
      } finally {
        await kernel?.release();
      }
    },
  };
}

/** The kernel's lock, or null where no flock program works here (the lock file alone then). */
async function takeKernelLock(stateDir: string, opts: LockOptions): Promise<KernelLock | null> {
  const program = opts.flockProgram ?? 'flock';
  let got = await takeFlock(stateDir, { program, waitMs: 0 });
  if (got.kind === 'busy') {
    const holder = await readLockHolder(stateDir);
    if (holder !== null) throw new StateLockedError(stateDir, holder);
    const waitMs = opts.flockWaitMs ?? FLOCK_WAIT_MS;
    opts.onEvent?.({ kind: 'waiting', waitMs });
    got = await takeFlock(stateDir, { program, waitMs });
    if (got.kind === 'busy') throw new StateLockedError(stateDir, await readLockHolder(stateDir));
  }
  if (got.kind === 'held') return got.lock;
  opts.onEvent?.({ kind: 'fallback', reason: got.reason, detail: got.detail });
  return null;
}

async function acquireLockFile(stateDir: string, opts: LockOptions): Promise<{ release(): Promise<void> }> {
  const pid = opts.pid ?? process.pid;
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
