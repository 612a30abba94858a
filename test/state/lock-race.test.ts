// The state lock under races and odd holders, driven deterministically:
// starters are held at the moment between judging a stale lock file and
// taking it over, and at the moment a live lock moved aside is put back,
// then let go one after the other; only one may hold the state_dir. With
// the kernel's lock (flock) a second starter cannot even judge the lock
// file while the first is inside; the lock file alone (no flock program)
// still keeps two starters apart. A pid that now belongs to another process
// (after a reboot, or reused) and a zombie are not owners.
import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fsPromises } from 'node:fs';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { StateLockedError } from '../../src/errors.js';
import { acquireLock, LOCK_FILE, processStamp, readLockHolder } from '../../src/state/lock.js';
import { onCleanup, tempDir } from './helpers.js';

/** A process that lives until the test ends (another starter's identity). */
function liveChild(): ChildProcess {
  const c = spawn('sleep', ['60'], { stdio: 'ignore' });
  onCleanup(async () => c.kill('SIGKILL'));
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

/** A flock program that is not there: the fallback, the lock file alone. */
const NO_FLOCK = { flockProgram: 'spoolship-test-no-such-flock' };

/** A promise's outcome as a value, so a test can wait on several starters without one's refusal throwing. */
function settle<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; err: unknown }> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (err: unknown) => ({ ok: false as const, err }),
  );
}

describe('the state lock', () => {
  it('a third starter racing in while a second puts back the live lock it moved aside: one holder', async () => {
    const dir = await tempDir('spoolship-lock-');
    await writeFile(path.join(dir, LOCK_FILE), `${await deadPid()}\n`);
    const [b, c] = [liveChild(), liveChild()];
    const ga = gate();
    const gb = gate();
    // The instant between moving a live lock aside and linking it back.
    const putBack = gate();
    const link = fsPromises.link;
    const spy = vi.spyOn(fsPromises, 'link').mockImplementation(async (from, to) => {
      if (String(from).includes('.stale.')) await putBack.wait();
      return link(from, to);
    });
    onCleanup(async () => spy.mockRestore());
    // A short wait for a lock that names no live owner: A holds it, paused, until B has its answer.
    const quick = { flockWaitMs: 200 };
    const a = settle(acquireLock(dir, { ...quick, beforeTakeover: ga.wait }));
    await ga.reached; // A judged the dead owner's lock stale
    const bDone = settle(acquireLock(dir, { ...quick, pid: b.pid!, beforeTakeover: gb.wait }));
    // B judges the same stale lock and waits at its gate, or, kept out while A
    // is inside, is refused without reaching it.
    await Promise.race([gb.reached, bDone]);
    ga.open();
    expect((await a).ok, 'A takes the stale lock over').toBe(true);
    gb.open();
    // B moved A's live lock aside and holds there, or has its answer already.
    await Promise.race([putBack.reached, bDone]);
    const cDone = settle(acquireLock(dir, { ...quick, pid: c.pid! }));
    const cResult = await cDone;
    putBack.open();
    const results = { A: await a, B: await bDone, C: cResult };
    const holders = Object.entries(results)
      .filter(([, r]) => r.ok)
      .map(([who]) => who);
    for (const [, r] of Object.entries(results)) if (r.ok) onCleanup(() => (r.value as { release(): Promise<void> }).release());
    expect(holders, 'starters that hold the state_dir at once').toEqual(['A']);
    expect(await readLockHolder(dir)).toBe(process.pid);
  });

  it('the lock file alone (no flock): two starters that judged the same stale lock: the first takes it over, the second is refused naming it', async () => {
    const dir = await tempDir('spoolship-lock-');
    await writeFile(path.join(dir, LOCK_FILE), `${await deadPid()}\n`);
    const other = liveChild();
    const ga = gate();
    const gb = gate();
    // With flock the second could not judge the lock while the first is inside.
    const a = acquireLock(dir, { ...NO_FLOCK, beforeTakeover: ga.wait });
    const b = acquireLock(dir, { ...NO_FLOCK, pid: other.pid!, beforeTakeover: gb.wait });
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
    const dir = await tempDir('spoolship-lock-');
    const other = liveChild();
    const lock = await acquireLock(dir, { pid: other.pid! });
    // What a second starter reads at any moment after the lock's name exists.
    expect((await readFile(path.join(dir, LOCK_FILE), 'utf8')).split('\n')[0]).toBe(String(other.pid));
    await expect(acquireLock(dir)).rejects.toMatchObject({ holderPid: other.pid });
    await lock.release();
  });

  it('a live pid that is another process now (a reboot, a reused pid) is no owner: the lock is taken over', async () => {
    const dir = await tempDir('spoolship-lock-');
    const other = liveChild();
    expect(processStamp(other.pid!)).toMatch(/^boot \S+ start \d+$/);
    await writeFile(path.join(dir, LOCK_FILE), `${other.pid}\nboot 00000000-0000-0000-0000-000000000000 start 1\n`);
    const lock = await acquireLock(dir);
    expect(await readLockHolder(dir)).toBe(process.pid);
    await lock.release();
  });

  it('a zombie is no owner', async () => {
    const dir = await tempDir('spoolship-lock-');
    // The child exits at once; its parent never reaps it. (A shell's `sleep 0 &`
    // before `exec sleep 60` was sometimes reaped by the shell under load.)
    const parent = spawn('perl', ['-e', '$| = 1; my $p = fork(); exit 0 if $p == 0; print "$p\n"; sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] });
    onCleanup(async () => parent.kill('SIGKILL'));
    const zombie = Number((await new Promise<Buffer>((r) => parent.stdout!.once('data', r))).toString().trim());
    await expect.poll(() => processStamp(zombie), { timeout: 20_000 }).toBe('zombie');
    await writeFile(path.join(dir, LOCK_FILE), `${zombie}\n`);
    const lock = await acquireLock(dir);
    expect(await readLockHolder(dir)).toBe(process.pid);
    await lock.release();
  });
});
