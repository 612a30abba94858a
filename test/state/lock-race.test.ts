// The state lock under races and odd holders, driven deterministically: two
// starters that judged the same stale lock are held at the moment between
// judging and taking over, then let go one after the other; only one may
// hold the state_dir. A pid that now belongs to another process (after a
// reboot, or reused) and a zombie are not owners.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StateLockedError } from '../../src/errors.js';
import { acquireLock, LOCK_FILE, processStamp, readLockHolder } from '../../src/state/lock.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), 'spoolship-lock-'));
  cleanups.push(() => rm(d, { recursive: true, force: true }));
  return d;
}

/** A process that lives until the test ends (another starter's identity). */
function liveChild(): ChildProcess {
  const c = spawn('sleep', ['60'], { stdio: 'ignore' });
  cleanups.push(async () => c.kill('SIGKILL'));
  return c;
}

/** The pid of a process that has ended and been reaped. */
async function deadPid(): Promise<number> {
  const c = spawn('true', { stdio: 'ignore' });
  await new Promise((r) => c.on('exit', r));
  return c.pid!;
}

function gate(): { wait: () => Promise<void>; reached: Promise<void>; open: () => void } {
  let open!: () => void;
  let reach!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  const reached = new Promise<void>((r) => (reach = r));
  return {
    reached,
    open,
    wait: async () => {
      reach();
      await opened;
    },
  };
}

describe('the state lock', () => {
  it('two starters that judged the same stale lock: the first takes it over, the second is refused naming it', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, LOCK_FILE), `${await deadPid()}\n`);
    const other = liveChild();
    const ga = gate();
    const gb = gate();
    const a = acquireLock(dir, { beforeTakeover: ga.wait });
    const b = acquireLock(dir, { pid: other.pid!, beforeTakeover: gb.wait });
    // Both read the dead owner's lock and judged it stale.
    await Promise.all([ga.reached, gb.reached]);
    ga.open();
    const lock = await a;
    gb.open();
    const refused = await b.then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused, 'the second starter took the lock too: two owners of one state_dir').toBeInstanceOf(StateLockedError);
    expect((refused as StateLockedError).holderPid).toBe(process.pid);
    expect((await readFile(path.join(dir, LOCK_FILE), 'utf8')).split('\n')[0]).toBe(String(process.pid));
    expect(await readLockHolder(dir)).toBe(process.pid);
    // Nothing of either starter is left beside the lock.
    expect((await readdir(dir)).sort()).toEqual([LOCK_FILE]);
    await lock.release();
    expect(await readdir(dir)).toEqual([]);
  });

  it('a starter never reads a lock half-written: the file appears with its pid in it', async () => {
    const dir = await tempDir();
    const other = liveChild();
    const lock = await acquireLock(dir, { pid: other.pid! });
    // What a second starter reads at any moment after the lock's name exists.
    expect((await readFile(path.join(dir, LOCK_FILE), 'utf8')).split('\n')[0]).toBe(String(other.pid));
    await expect(acquireLock(dir)).rejects.toMatchObject({ holderPid: other.pid });
    await lock.release();
  });

  it('a live pid that is another process now (a reboot, a reused pid) is no owner: the lock is taken over', async () => {
    const dir = await tempDir();
    const other = liveChild();
    expect(processStamp(other.pid!)).toMatch(/^boot \S+ start \d+$/);
    await writeFile(path.join(dir, LOCK_FILE), `${other.pid}\nboot 00000000-0000-0000-0000-000000000000 start 1\n`);
    const lock = await acquireLock(dir);
    expect(await readLockHolder(dir)).toBe(process.pid);
    await lock.release();
  });

  it('a zombie is no owner', async () => {
    const dir = await tempDir();
    // The child exits at once; its parent never reaps it. (A shell's `sleep 0 &`
    // before `exec sleep 60` was sometimes reaped by the shell under load.)
    const parent = spawn('perl', ['-e', '$| = 1; my $p = fork(); exit 0 if $p == 0; print "$p\n"; sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] });
    cleanups.push(async () => parent.kill('SIGKILL'));
    const zombie = Number((await new Promise<Buffer>((r) => parent.stdout!.once('data', r))).toString().trim());
    await expect.poll(() => processStamp(zombie), { timeout: 20_000 }).toBe('zombie');
    await writeFile(path.join(dir, LOCK_FILE), `${zombie}\n`);
    const lock = await acquireLock(dir);
    expect(await readLockHolder(dir)).toBe(process.pid);
    await lock.release();
  });
});
