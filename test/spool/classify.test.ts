// The scan's first step (src/spool/classify.ts), one rule at a time, on real
// files and a real state store: what a listed path is found to be, and what
// a followed file no path was found for is. Classifying changes nothing:
// each case checks the tailers and the state are as they were.
import { link, mkdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { classifySlice, classifyUnmatched, classifyUnseen, look, type ClassifyContext, type Listed } from '../../src/spool/classify.js';
import { fileKey, fingerprintOf, readHead } from '../../src/spool/identity.js';
import { KnownFiles } from '../../src/spool/known-files.js';
import { FileTailer } from '../../src/spool/tailer.js';
import { Tailers } from '../../src/spool/tailers.js';
import { setup } from './helpers.js';

async function world() {
  const s = await setup();
  const tailers = new Tailers();
  const known = new KnownFiles(s.store);
  const ctx = (firstScan = false): ClassifyContext => ({ tailers, known, store: s.store, firstScan });
  const file = async (name: string, content: string) => {
    const p = path.join(s.spool, 'ev', name);
    await writeFile(p, content);
    return { p, st: await stat(p) };
  };
  const listed = async (p: string): Promise<Listed> => {
    const st = await stat(p);
    return { p, ds: 'ev', st, head: await readHead(p, st.dev, st.ino) };
  };
  /** The state knows the file at p (its first `fpOf` bytes), committed to `committed`. */
  const remember = (p: string, st: { dev: number; ino: number }, fpOf: string, committed: number, gen = 0) => {
    const f = fingerprintOf(Buffer.from(fpOf));
    s.store.trackFile({ key: fileKey(st.dev, st.ino, gen), dev: st.dev, ino: st.ino, gen, fp: f.fp, fpLen: f.fpLen, path: p, ds: 'ev' }, committed);
    known.rebuild();
  };
  const follow = (p: string, st: { dev: number; ino: number }, offset: number, gen = 0) => {
    const t = new FileTailer(fileKey(st.dev, st.ino, gen), 'ev', p, offset, st.dev, st.ino, gen, 0, 1 << 16);
    tailers.add(t);
    return t;
  };
  return { s, tailers, ctx, file, listed, remember, follow };
}

describe('classifying a listed path', () => {
  it('a followed file is followed, at a new path too; another name of it later in the scan is an alias', async () => {
    const w = await world();
    const { p, st } = await w.file('app.ndjson', '{"a":1}\n');
    const before = path.join(w.s.spool, 'ev', 'before.ndjson');
    w.remember(before, st, '{"a":1}\n', 8);
    const t = w.follow(before, st, 8);
    const other = path.join(w.s.spool, 'ev', 'z-link.ndjson');
    await link(p, other);
    const claimed = new Set<string>();
    const found = await classifySlice(w.ctx(), [await w.listed(p), await w.listed(other)], claimed);
    expect(found.map((f) => f.kind)).toEqual(['followed', 'alias']);
    expect(found[0]).toMatchObject({ t, p });
    expect(t.path, 'classifying moved nothing').toBe(path.join(w.s.spool, 'ev', 'before.ndjson'));
    expect(claimed).toEqual(new Set([`${st.dev}:${st.ino}`]));
  });

  it('a file the state knows resumes where it was committed; one now shorter than that is a new generation', async () => {
    const w = await world();
    const content = '{"a":1}\n{"a":2}\n';
    const { p, st } = await w.file('app.ndjson', content);
    w.remember(p, st, content, 8);
    const [resumed] = await classifySlice(w.ctx(), [await w.listed(p)], new Set());
    expect(resumed).toMatchObject({ kind: 'resumed', resume: 8 });
    w.s.store.forgetFile(fileKey(st.dev, st.ino, 0));
    w.remember(p, st, content.slice(0, 8), 100);
    const [truncated] = await classifySlice(w.ctx(), [await w.listed(p)], new Set());
    expect(truncated).toMatchObject({ kind: 'new', gen: 1 });
    expect(w.tailers.size, 'classifying followed nothing').toBe(0);
  });

  it('a new file is new at generation 0; a known inode with other first bytes is a new generation', async () => {
    const w = await world();
    const { p } = await w.file('fresh.ndjson', '{"n":1}\n');
    const { p: reused, st } = await w.file('reused.ndjson', '{"new":1}\n');
    w.remember(reused, st, '{"old":1}\n', 10);
    const found = await classifySlice(w.ctx(), [await w.listed(p), await w.listed(reused)], new Set());
    expect(found).toMatchObject([
      { kind: 'new', gen: 0, p },
      { kind: 'new', gen: 1, p: reused },
    ]);
    expect([...w.s.store.files()].length, 'classifying tracked nothing').toBe(1);
  });

  it('a finished file found again with its first bytes came back; with other first bytes it is a new generation', async () => {
    const w = await world();
    const content = '{"a":1}\n{"a":2}\n';
    const { p, st } = await w.file('app.ndjson', content);
    w.remember(p, st, content, 16);
    const t = w.follow(p, st, 16);
    t.finish();
    const [back] = await classifySlice(w.ctx(), [await w.listed(p)], new Set());
    expect(back).toMatchObject({ kind: 'came back', t });
    await writeFile(p, '{"b":1}\n{"b":2}\n{"b":3}\n');
    const [other] = await classifySlice(w.ctx(), [await w.listed(p)], new Set());
    expect(other).toMatchObject({ kind: 'new', gen: 1 });
    expect(t.finished, 'classifying revived nothing').toBe(true);
  });

  it('a followed file without its descriptor (idle), its inode now at another path with other first bytes or shorter, in another Data Source: new there, not followed (the inode was reused)', async () => {
    const w = await world();
    const old = path.join(w.s.spool, 'ev', 'a.ndjson');
    const otherDir = path.join(w.s.spool, 'other');
    await mkdir(otherDir);
    // The file now holding the inode the idle a.ndjson had: what the state knows of a.ndjson is not its start.
    const reused = path.join(otherDir, 'g.ndjson');
    await writeFile(reused, '{"g":1}\n{"g":2}\n{"g":3}\n');
    const st = await stat(reused);
    w.remember(old, st, '{"a":1}\n', 8);
    const t = w.follow(old, st, 8);
    expect(t.fh).toBeNull();
    const [looked] = await look(w.ctx(), [{ p: reused, ds: 'other', file: 'not a link' }], 1);
    expect(looked!.head, 'its first bytes are read').not.toBeNull();
    const [found] = await classifySlice(w.ctx(), [looked!], new Set());
    expect(found).toMatchObject({ kind: 'new', gen: 1, p: reused, ds: 'other' });
    // Shorter than what was read of the old file: new too, not a truncation of it.
    await writeFile(reused, '');
    const [empty] = await classifySlice(w.ctx(), [{ p: reused, ds: 'other', st: await stat(reused), head: await readHead(reused, st.dev, st.ino) }], new Set());
    expect(empty).toMatchObject({ kind: 'new', gen: 1, ds: 'other' });
    // Renamed while idle (its first bytes, no shorter): still followed.
    await writeFile(reused, '{"a":1}\n{"a":2}\n');
    const [renamed] = await classifySlice(w.ctx(), [{ p: reused, ds: 'other', st: await stat(reused), head: await readHead(reused, st.dev, st.ino) }], new Set());
    expect(renamed).toMatchObject({ kind: 'followed', t });
  });

  it('a path gone between the listing and the stat is vanished, and claims nothing', async () => {
    const w = await world();
    const claimed = new Set<string>();
    const found = await classifySlice(w.ctx(), [{ p: path.join(w.s.spool, 'ev', 'gone.ndjson'), ds: 'ev', st: null, head: null }], claimed);
    expect(found).toMatchObject([{ kind: 'vanished' }]);
    expect(claimed.size).toBe(0);
  });
});

describe('classifying followed files no listed path was found for', () => {
  it('renamed away, away (detached already), or unlisted (its directory failed to list); found and finished ones are not looked at', async () => {
    const w = await world();
    const files = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((n) => w.file(`${n}.ndjson`, `{"${n}":1}\n`)));
    const [away, detached, unlisted, seen, finished] = files.map(({ p, st }) => w.follow(p, st, 0));
    detached!.detach(0, 'renamed');
    finished!.finish();
    void away;
    const found = classifyUnseen(w.tailers, new Set([seen!.key]), (p) => p === unlisted!.path);
    expect(found.map((f) => [f.kind, f.t])).toEqual([
      ['renamed away', away],
      ['away', detached],
      ['unlisted', unlisted],
    ]);
  });
});

describe('classifying files of the state matched by no pattern (first scan)', () => {
  it('one still at its path is unmatched; one whose inode a listed path has is not (not followed is not renamed away)', async () => {
    const w = await world();
    const a = await w.file('app.ndjson.1', '{"a":1}\n{"a":2}\n');
    const b = await w.file('app.ndjson', '{"b":1}\n{"b":2}\n');
    w.remember(a.p, a.st, '{"a":1}\n', 8);
    w.remember(b.p, b.st, '{"b":1}\n', 8);
    const stat0 = (p: string) => stat(p).catch(() => null);
    const found = await classifyUnmatched(w.ctx(true), new Set([`${b.st.dev}:${b.st.ino}`]), stat0);
    expect(found.map((u) => u.fp.meta.path)).toEqual([a.p]);
    expect(found[0]).toMatchObject({ resume: 8 });
  });
});
