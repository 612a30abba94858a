// spool.forget_after_ms (SPEC section 3, "Rotation"): a file that disappears
// only briefly keeps its progress; it is forgotten only once it has been
// gone that long. A file away for 3 s used to be finished at once, then read
// again from 0 when it came back (3,000 of 3,000 lines sent twice).
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { readdir, readlink } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manual-clock.js';
import { setup } from './helpers.js';

const IDLE_MS = 1000;
const FORGET_MS = 60_000;

async function holds(file: string): Promise<boolean> {
  for (const fd of await readdir('/proc/self/fd')) {
    if ((await readlink(`/proc/self/fd/${fd}`).catch(() => '')) === file) return true;
  }
  return false;
}

async function spool(clock: ManualClock) {
  const s = await setup({}, { clock, idleMs: IDLE_MS, forgetAfterMs: FORGET_MS });
  const file = path.join(s.spool, 'ev', 'app.ndjson');
  // Away: a directory far from the spool (not where an olddir would be looked for).
  const away = path.join(s.spool, '..', 'far', 'away', 'app.ndjson');
  await mkdir(path.dirname(away), { recursive: true });
  const lines = Array.from({ length: 30 }, (_, n) => `{"n":${n}}\n`).join('');
  await writeFile(file, lines);
  await s.spooler.scan();
  await s.readAll();
  // Idle: its descriptor is given back, so nothing follows it while away.
  clock.advance(IDLE_MS);
  await s.internals.readRound();
  expect(await holds(file)).toBe(false);
  const body = () => s.closed.map((b) => b.body.toString()).join('');
  return { ...s, file, away, lines, body };
}

describe('spool.forget_after_ms', () => {
  it('a file moved away and back within it reads on where it was', async () => {
    const clock = new ManualClock();
    const { spooler, internals, readAll, file, away, lines, body } = await spool(clock);
    await rename(file, away);
    await spooler.scan();
    await internals.readRound();
    clock.advance(3000);
    await spooler.scan();
    await internals.readRound();
    await rename(away, file);
    await spooler.scan();
    await readAll();
    expect([...spooler.files].map((t) => [t.key.split(':')[2], t.finished, t.detached])).toEqual([['0', false, false]]);
    expect(body(), 'no line read twice').toBe(lines);
  });

  it('its directory renamed away and back: the same', async () => {
    const clock = new ManualClock();
    const { spool: dir, spooler, internals, readAll, lines, body } = await spool(clock);
    await rename(path.join(dir, 'ev'), path.join(dir, '..', 'ev-moved'));
    await spooler.scan();
    await internals.readRound();
    clock.advance(3000);
    await rename(path.join(dir, '..', 'ev-moved'), path.join(dir, 'ev'));
    await spooler.scan();
    await readAll();
    expect([...spooler.files].map((t) => [t.key.split(':')[2], t.finished])).toEqual([['0', false]]);
    expect(body()).toBe(lines);
  });

  it('a file gone for longer is finished and forgotten', async () => {
    const clock = new ManualClock();
    const { spooler, internals, store, file, away } = await spool(clock);
    for (const t of [...spooler.files]) for (const e of store.file(t.key)!.entries) store.completeBatch(e.owner);
    await rename(file, away);
    await spooler.scan();
    await internals.readRound();
    clock.advance(FORGET_MS);
    await internals.readRound();
    await spooler.scan();
    expect({ followed: [...spooler.files].length, state: store.fileCount }).toEqual({ followed: 0, state: 0 });
  });

  it('a file the state knows that no scan finds (deleted while the agent was down) is forgotten after it', async () => {
    const clock = new ManualClock();
    const { spooler, store } = await setup({}, { clock, forgetAfterMs: FORGET_MS });
    store.trackFile({ key: '1:42:0', dev: 1, ino: 42, gen: 0, fp: '', fpLen: 0, path: '/nonexistent/spoolship-test/a.ndjson', ds: 'ev' }, 100);
    await spooler.scan();
    clock.advance(FORGET_MS - 1);
    await spooler.scan();
    expect(store.fileCount, 'kept while it may come back').toBe(1);
    clock.advance(1);
    await spooler.scan();
    expect(store.fileCount).toBe(0);
  });
});
