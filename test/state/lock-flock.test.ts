// The state lock's kernel half: an flock(2) on the state_dir held by a child
// `flock` program. Held by another process it refuses, or waits when no
// live owner is named; released, it is free at once; its child killed, the
// agent hears of it; with no flock program it falls back to the lock file
// alone, which still keeps two agents apart.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { StateLockedError } from '../../src/errors.js';
import { acquireLock, LOCK_FILE, readLockHolder, type LockEvent } from '../../src/state/lock.js';
import { onCleanup, tempDir } from './helpers.js';

const NO_FLOCK = { flockProgram: 'spoolship-test-no-such-flock' };

/** Is the directory's flock free now? `flock -n` answers at once: 0 free, 1 held. */
function flockFree(dir: string): boolean {
  const r = spawnSync('flock', ['-n', dir, 'true']);
  if (r.status !== 0 && r.status !== 1) throw new Error(`flock: ${r.stderr.toString()}`);
  return r.status === 0;
}

/** Another process holding the directory's flock (and writing no lock file) until its stdin closes. */
async function outsideHolder(dir: string): Promise<ChildProcess> {
  const c = spawn('flock', ['-o', dir, 'cat'], { stdio: ['pipe', 'pipe', 'ignore'] });
  onCleanup(async () => c.kill('SIGKILL'));
  c.stdin!.write('held\n');
  await new Promise((r) => c.stdout!.once('data', r));
  return c;
}

/** The pids of `flock` processes whose command line names `dir`. */
function flockChildrenOn(dir: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      if (path.basename(argv[0] ?? '') === 'flock' && argv.includes(dir)) out.push(Number(name));
    } catch {
      /* ended meanwhile */
    }
  }
  return out;
}

describe('the state lock with flock', () => {
  it('holds the kernel lock on the state_dir until release, and the lock is free when release returns', async () => {
    const dir = await tempDir('spoolship-flock-');
    const lock = await acquireLock(dir);
    expect(lock.by).toBe('flock');
    expect(flockFree(dir)).toBe(false);
    expect(await readLockHolder(dir)).toBe(process.pid);
    // No file for the kernel's lock: it is on the directory.
    expect(await readdir(dir)).toEqual([LOCK_FILE]);
    await lock.release();
    expect(flockFree(dir)).toBe(true);
    expect(await readdir(dir)).toEqual([]);
    await lock.release(); // idempotent
  });

  it('a holder named in the lock file and alive: refused at once, naming it, without waiting', async () => {
    const dir = await tempDir('spoolship-flock-');
    const lock = await acquireLock(dir);
    onCleanup(() => lock.release());
    const events: LockEvent[] = [];
    const refused = await acquireLock(dir, { onEvent: (e) => events.push(e) }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(StateLockedError);
    expect((refused as StateLockedError).holderPid).toBe(process.pid);
    expect(events).toEqual([]);
  });

  it('held with no live owner named (a killed agent\'s flock letting go): waits, and takes it once it is let go', async () => {
    const dir = await tempDir('spoolship-flock-');
    const holder = await outsideHolder(dir);
    const events: LockEvent[] = [];
    const starting = acquireLock(dir, {
      flockWaitMs: 30_000,
      onEvent: (e) => {
        events.push(e);
        // Let go only once the starter is waiting: the wait is what is tested.
        if (e.kind === 'waiting') holder.stdin!.end();
      },
    });
    const lock = await starting;
    expect(events).toEqual([{ kind: 'waiting', waitMs: 30_000 }]);
    expect(lock.by).toBe('flock');
    await lock.release();
  });

  it('held with no live owner named, and not let go within the wait: refused (exit code, not a guess), naming no pid', async () => {
    const dir = await tempDir('spoolship-flock-');
    await outsideHolder(dir);
    const events: LockEvent[] = [];
    const refused = await acquireLock(dir, { flockWaitMs: 100, onEvent: (e) => events.push(e) }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(StateLockedError);
    expect((refused as StateLockedError).holderPid).toBeNull();
    expect(events.map((e) => e.kind)).toEqual(['waiting']);
    // The refused starter left nothing behind.
    expect(await readdir(dir)).toEqual([]);
  });

  it('its flock process killed while held: the lock says so, once', async () => {
    const dir = await tempDir('spoolship-flock-');
    const lost: LockEvent[] = [];
    const lock = await acquireLock(dir, { onEvent: (e) => lost.push(e) });
    onCleanup(() => lock.release());
    const [pid, ...more] = flockChildrenOn(dir);
    expect(more).toEqual([]);
    process.kill(pid!, 'SIGKILL');
    await expect.poll(() => lost.length, { timeout: 20_000 }).toBe(1);
    expect(lost[0]).toMatchObject({ kind: 'lost' });
    expect(flockFree(dir)).toBe(true);
  });

  it('no flock program: the lock file alone, said once, and it still refuses a second starter with or without flock', async () => {
    const dir = await tempDir('spoolship-flock-');
    // The holder is another live process (a lock file naming this one's own pid is its own to take over).
    const other = spawn('sleep', ['60'], { stdio: 'ignore' });
    onCleanup(async () => other.kill('SIGKILL'));
    const events: LockEvent[] = [];
    const lock = await acquireLock(dir, { ...NO_FLOCK, pid: other.pid!, onEvent: (e) => events.push(e) });
    expect(lock.by).toBe('lock_file');
    expect(events).toEqual([{ kind: 'fallback', reason: 'flock_missing', detail: `${NO_FLOCK.flockProgram}: ENOENT` }]);
    expect(flockFree(dir)).toBe(true);
    await expect(acquireLock(dir, NO_FLOCK)).rejects.toMatchObject({ holderPid: other.pid });
    // A starter that has flock gets the kernel's lock, then finds the live lock file.
    await expect(acquireLock(dir)).rejects.toMatchObject({ holderPid: other.pid });
    expect(flockFree(dir)).toBe(true);
    await lock.release();
    expect(await readdir(dir)).toEqual([]);
  });

  it('a flock program that fails otherwise: the lock file alone, saying why', async () => {
    const dir = await tempDir('spoolship-flock-');
    const events: LockEvent[] = [];
    // `false` exits 1 whatever it is given: neither "held" nor "busy".
    const lock = await acquireLock(dir, { flockProgram: 'false', onEvent: (e) => events.push(e) });
    expect(lock.by).toBe('lock_file');
    expect(events).toEqual([{ kind: 'fallback', reason: 'flock_failed', detail: 'false exited with 1' }]);
    await lock.release();
  });
});
