// on_complete: delete (SPEC section 3): a file is deleted only when fully
// committed, not modified for idle_ms, and superseded. A file idle for
// idle_ms that got one more line, while a newer file appeared beside it,
// was deleted by the scan that saw both, before that line was read: lost.
import { appendFile, mkdir, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manual-clock.js';
import { sent, setup } from './helpers.js';
import { Admission } from '../../src/spool/admission.js';
import type { SpoolerOptions } from '../../src/spool/options.js';
import { Router } from '../../src/spool/routes.js';
import type { ReadLoop } from '../../src/spool/read-loop.js';

const IDLE_MS = 1000;

/**
 * A spooler with on_complete: delete on a manual clock; commitAll records and
 * acknowledges every closed batch, as the sender would. `sources`: the
 * spool.sources routes (a spooler made again on them, with its own reads).
 */
async function deleting(events: Parameters<typeof setup>[0] = {}, sources?: (spool: string) => ConstructorParameters<typeof Router>[1], more?: (spool: string) => Partial<SpoolerOptions>) {
  const clock = new ManualClock();
  const s0 = await setup(events, (spool) => ({ clock, idleMs: IDLE_MS, onComplete: 'delete', ...more?.(spool) }));
  let s = s0;
  if (sources) {
    const spooler = await s0.respool(new Router(s0.spool, sources(s0.spool)));
    const readAll = async () => {
      while (await (spooler as unknown as { reader: ReadLoop }).reader.round(() => false));
      s0.batcher.closeAll();
    };
    s = { ...s0, spooler, readAll };
  }
  let acked = 0;
  const commitAll = async () => {
    for (const b of s.closed.slice(acked)) {
      await s.store.recordIntent(b.id, b.ds);
      s.store.completeBatch(b.id);
    }
    acked = s.closed.length;
  };
  return { clock, s, commitAll };
}

describe('on_complete: delete', () => {
  it('keeps a superseded, idle file while it has bytes not read (and so not committed); deletes it once they are', async () => {
    const { clock, s, commitAll } = await deleting();
    const a = path.join(s.spool, 'ev', 'a.ndjson');
    const b = path.join(s.spool, 'ev', 'b.ndjson');
    await writeFile(a, '{"a":1}\n');
    await s.spooler.scan();
    await s.readAll();
    await commitAll();
    clock.advance(3 * IDLE_MS);
    await appendFile(a, '{"a":2}\n');
    await writeFile(b, '{"b":1}\n');
    // The scan sees a grown and b new: a is superseded and idle by its last read, its new line not read yet.
    await s.spooler.scan();
    expect(existsSync(a), 'a file with a line not read yet is not deleted').toBe(true);
    await s.readAll();
    await commitAll();
    expect(s.closed.map((x) => x.body.toString()).join('')).toContain('{"a":2}\n');
    clock.advance(10);
    await appendFile(b, '{"b":2}\n');
    await s.spooler.scan();
    await s.readAll();
    await commitAll();
    clock.advance(IDLE_MS);
    await s.spooler.scan();
    expect(existsSync(a), 'deleted once fully committed, idle and superseded').toBe(false);
    expect(existsSync(b)).toBe(true);
  });
});

describe('on_complete: delete, two writers in one directory', () => {
  it('never deletes the newer file because an older one grew after it: only a file created after it supersedes it', async () => {
    const { clock, s, commitAll } = await deleting();
    const older = path.join(s.spool, 'ev', 'app2.ndjson');
    const newer = path.join(s.spool, 'ev', 'app1.ndjson');
    await writeFile(older, '{"o":1}\n');
    // Created after it (its birth time is later), by another writer.
    await new Promise((r) => setTimeout(r, 20));
    await writeFile(newer, '{"n":1}\n');
    await s.spooler.scan();
    await s.readAll();
    await commitAll();
    // The newer file goes quiet for longer than idle_ms while the older one's writer goes on.
    clock.advance(3 * IDLE_MS);
    await appendFile(older, '{"o":2}\n');
    await s.spooler.scan();
    await s.readAll();
    await commitAll();
    clock.advance(IDLE_MS);
    await s.spooler.scan();
    expect(existsSync(newer), 'the newer file, idle but superseded by nothing, is kept').toBe(true);
    expect(existsSync(older), 'the older file is still growing').toBe(true);
    // The older one, idle now with a newer file beside it, is superseded.
    clock.advance(IDLE_MS);
    await appendFile(newer, '{"n":2}\n');
    await s.spooler.scan();
    await s.readAll();
    await commitAll();
    clock.advance(IDLE_MS);
    await s.spooler.scan();
    expect(existsSync(older), 'the older file, idle and superseded by a newer one, is deleted').toBe(false);
    expect(existsSync(newer)).toBe(true);
  });
});

describe('on_complete: delete, a newer file of another Data Source in the same directory', () => {
  it('does not supersede: the file its writer keeps (idle for a while) is kept, and its next lines ship', async () => {
    const { clock, s, commitAll } = await deleting({}, (spool) => [{ include: [path.join(spool, 'ev', 'audit*.ndjson')], datasource: 'audit' }]);
    const app = path.join(s.spool, 'ev', 'app.ndjson');
    const other = path.join(s.spool, 'ev', 'audit.ndjson');
    await writeFile(app, '{"app":1}\n');
    await s.spooler.scan();
    await s.readAll();
    await commitAll();
    // The app's writer pauses longer than idle_ms while audit.ndjson (Data Source audit), newer, grows beside it.
    clock.advance(3 * IDLE_MS);
    await new Promise((r) => setTimeout(r, 20));
    await writeFile(other, '{"audit":1}\n');
    await s.spooler.scan();
    await s.readAll();
    await commitAll();
    clock.advance(IDLE_MS);
    await s.spooler.scan();
    expect(existsSync(app), 'a newer file of another Data Source does not supersede it').toBe(true);
    expect(s.closed.map((b) => b.ds).sort()).toEqual(['audit', 'ev']);
  });
});

describe('on_complete: delete, renamed out of the patterns', () => {
  it('never deletes the new file that took the old name (rename-and-create)', async () => {
    const { clock, s, commitAll } = await deleting();
    const app = path.join(s.spool, 'ev', 'app.ndjson');
    await writeFile(app, '{"old":1}\n');
    await s.spooler.scan();
    await s.readAll();
    await commitAll();
    // logrotate's default: the old file renamed out of the patterns, a new one created at the name.
    await rename(app, path.join(s.spool, 'ev', 'app.ndjson.1'));
    await writeFile(app, '{"new":1}\n');
    clock.advance(3 * IDLE_MS);
    await s.spooler.scan();
    await s.readAll();
    await commitAll();
    clock.advance(3 * IDLE_MS);
    await s.spooler.scan();
    await s.readAll();
    expect(existsSync(app), 'the new file is not deleted').toBe(true);
    expect(existsSync(path.join(s.spool, 'ev', 'app.ndjson.1')), 'the old one, renamed out of the patterns, is').toBe(false);
    expect(s.closed.map((x) => x.body.toString()).join('')).toBe('{"old":1}\n{"new":1}\n');
  });

  it('deletes a renamed file that ended in a partial line, once that line went whole and is committed', async () => {
    const finished: Array<[string, boolean]> = [];
    const { clock, s, commitAll } = await deleting({ onFinished: (_ds, p, deleted) => finished.push([path.basename(p), deleted]) });
    const app = path.join(s.spool, 'ev', 'app.ndjson');
    const rotated = path.join(s.spool, 'ev', 'app.ndjson.1');
    await writeFile(app, '{"a":1}\n{"half":1}');
    await s.spooler.scan();
    await s.readAll();
    await commitAll();
    await rename(app, rotated);
    await s.spooler.scan();
    // Idle for idle_ms since the rename: read to its end, then finished, its partial line sent whole.
    clock.advance(3 * IDLE_MS);
    await s.spooler.scan();
    await s.readAll();
    await s.readAll();
    expect(s.closed.map((x) => x.body.toString()).join('')).toBe('{"a":1}\n{"half":1}\n');
    expect(existsSync(rotated), 'not deleted before the partial line is committed').toBe(true);
    await commitAll();
    await s.spooler.scan();
    expect(existsSync(rotated), 'deleted once all of it is committed').toBe(false);
    expect(finished).toEqual([['app.ndjson.1', true]]);
  });
});

/**
 * `ev/app.ndjson` shipped and committed, then a reload (SIGHUP with another
 * spool.dir) whose routes match it no more: the new spooler, and `settle`
 * (a scan and every read of it, what was read closed and committed).
 */
async function shippedThenReloaded(events: Parameters<typeof setup>[0] = {}) {
  const d = await deleting(events);
  const { s, commitAll } = d;
  const app = path.join(s.spool, 'ev', 'app.ndjson');
  await writeFile(app, '{"a":1}\n');
  await s.spooler.scan();
  await s.readAll();
  await commitAll();
  const elsewhere = path.join(path.dirname(s.spool), 'other-spool');
  await mkdir(elsewhere);
  const after = await s.respool(new Router(elsewhere, []));
  const settle = async () => {
    await after.scan();
    while (await (after as unknown as { reader: ReadLoop }).reader.round(() => false));
    s.batcher.closeAll();
    await commitAll();
  };
  await settle();
  return { ...d, app, settle };
}

describe('on_complete: delete after a reload that no longer matches a file', () => {
  it('keeps the file: it was neither renamed out of the patterns nor superseded, only the config changed', async () => {
    const finished: Array<[string, boolean]> = [];
    const { clock, app, settle } = await shippedThenReloaded({ onFinished: (_ds, p, deleted) => finished.push([path.basename(p), deleted]) });
    await appendFile(app, '{"a":2}\n');
    await settle();
    for (let i = 0; i < 3; i++) {
      clock.advance(3 * IDLE_MS);
      await settle();
    }
    expect(existsSync(app), 'a file the config stopped matching is kept').toBe(true);
    expect(finished.filter(([, deleted]) => deleted)).toEqual([]);
  });

  it('keeps it even once it is renamed (logrotate goes on): it never was renamed out of the patterns', async () => {
    const { clock, app, settle } = await shippedThenReloaded();
    // Renamed while the new pipeline still holds it open.
    await rename(app, `${app}.1`);
    for (let i = 0; i < 3; i++) {
      await settle();
      clock.advance(3 * IDLE_MS);
    }
    await settle();
    expect(existsSync(`${app}.1`), 'kept once renamed').toBe(true);
  });
});

describe('on_complete: delete and a file left out of a scan where it is', () => {
  it('keeps it: only a file renamed out of the patterns (its path changed) counts as renamed away', async () => {
    const { clock, s, commitAll } = await deleting();
    const app = path.join(s.spool, 'ev', 'app.ndjson');
    await writeFile(app, '{"a":1}\n');
    await s.spooler.scan();
    await s.readAll();
    await commitAll();
    // The scan's listing leaves the file out while it stays at its path (as routes that match it no more would).
    s.internals.listCandidates = async () => {
      const listing = await s.realList();
      return { ...listing, paths: listing.paths.filter((p) => p !== app) };
    };
    for (let i = 0; i < 3; i++) {
      clock.advance(3 * IDLE_MS);
      await s.spooler.scan();
      await s.readAll();
      await commitAll();
    }
    expect(existsSync(app), 'a file still at its path is not deleted').toBe(true);
  });
});

/**
 * A spooler deleting with spool.follow_symlinks: any, its spool's parent
 * directory given (outside spool.dir, and beside it: logrotate's olddir).
 */
async function deletingThroughLinks() {
  const d = await deleting({}, undefined, (spool) => ({
    admission: new Admission({ spoolDir: spool, sourceBases: [], exclude: [], followSymlinks: 'any', onSkippedLink: () => undefined }),
  }));
  const settle = async () => {
    await d.s.spooler.scan();
    await d.s.readAll();
    await d.commitAll();
  };
  return { ...d, settle, beside: path.dirname(d.s.spool) };
}

describe('on_complete: delete with follow_symlinks: any', () => {
  it('never deletes a link target outside spool.dir, nor the link, when the link moves on to the next file', async () => {
    const { clock, s, settle, beside } = await deletingThroughLinks();
    const outside = path.join(beside, 'outside');
    await mkdir(outside);
    const day1 = path.join(outside, 'day-1.ndjson');
    const day2 = path.join(outside, 'day-2.ndjson');
    const link = path.join(s.spool, 'ev', 'current.ndjson');
    await writeFile(day1, '{"day":1}\n');
    await symlink(day1, link);
    await settle();
    // The application's link moves on to the next day's file (ln -sfn).
    await writeFile(day2, '{"day":2}\n');
    await rm(link);
    await symlink(day2, link);
    for (let i = 0; i < 3; i++) {
      clock.advance(3 * IDLE_MS);
      await settle();
    }
    expect(sent(s)).toBe('{"day":1}\n{"day":2}\n');
    expect(existsSync(day1), "the old target, the user's own file outside spool.dir, is kept").toBe(true);
    expect(await readlink(link)).toBe(day2);
  });

  it('still deletes a file of the spool renamed beside it (logrotate olddir), once committed', async () => {
    const { clock, s, settle, beside } = await deletingThroughLinks();
    const app = path.join(s.spool, 'ev', 'app.ndjson');
    const archive = path.join(beside, 'archive');
    await mkdir(archive);
    await writeFile(app, '{"a":1}\n');
    await settle();
    await rename(app, path.join(archive, 'app.ndjson.1'));
    for (let i = 0; i < 3; i++) {
      clock.advance(3 * IDLE_MS);
      await settle();
    }
    expect(sent(s)).toBe('{"a":1}\n');
    expect(existsSync(path.join(archive, 'app.ndjson.1')), 'renamed out of the patterns and committed: deleted').toBe(false);
  });
});

describe('copytruncate with a rewrite longer than what was read', () => {
  it('is counted as a truncation (the descriptor held proves the same file), and the new content is read from 0', async () => {
    const truncated: string[] = [];
    const discovered: string[] = [];
    const s = await setup({ onTruncated: (_ds, p) => truncated.push(p), onDiscovered: (_ds, p) => discovered.push(p) });
    const app = path.join(s.spool, 'ev', 'app.ndjson');
    await writeFile(app, '{"a":1}\n{"a":2}\n{"a":3}\n');
    await s.spooler.scan();
    await s.readAll();
    // Truncated and written again before the next scan: already past the old offset.
    await writeFile(app, '{"b":"a longer line than before"}\n{"b":"and another one, longer still"}\n');
    await s.spooler.scan();
    await s.readAll();
    expect(truncated).toEqual([app]);
    expect(discovered).toEqual([app]);
    expect(s.closed.map((x) => x.body.toString()).join('')).toBe('{"a":1}\n{"a":2}\n{"a":3}\n{"b":"a longer line than before"}\n{"b":"and another one, longer still"}\n');
  });
});

describe('a deleted file ending in a partial line (SPEC section 3: the remainder is sent as one whole line)', () => {
  it('keeps its descriptor while idle, so the deletion is seen and the remainder sent at once, not after forget_after_ms', async () => {
    const clock = new ManualClock();
    const finished: Array<[string, boolean, boolean]> = [];
    const s = await setup({ onFinished: (_ds, p, deleted, gone) => finished.push([path.basename(p), deleted, gone]) }, { clock, idleMs: IDLE_MS, forgetAfterMs: 600_000 });
    const app = path.join(s.spool, 'ev', 'app.ndjson');
    await writeFile(app, '{"a":1}\n{"b":2}');
    await s.spooler.scan();
    await s.readAll();
    clock.advance(3 * IDLE_MS);
    await s.internals.readRound();
    await rm(app);
    await s.spooler.scan();
    await s.readAll();
    expect(s.closed.map((x) => x.body.toString()).join('')).toBe('{"a":1}\n{"b":2}\n');
    // Deleted by someone else: not by the agent (deleted), but gone (file_finished says which).
    expect(finished).toEqual([['app.ndjson', false, true]]);
  });
});
