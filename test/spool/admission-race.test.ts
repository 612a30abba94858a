// spool.follow_symlinks is decided for the file that is read, not for the
// path at one moment: a path flipped between a regular file (or a link
// inside the spool) and a link to a secret outside it, between the scan's
// listing and its stat, shipped the secret (an audit: 50 of 50 lines at
// flips 10 ms apart, with `inside` and with `never`). Each flip is frozen
// here at the moment that counts, with the listing taken before it.
import { promises as fsPromises } from 'node:fs';
import { link, rename, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Admission, type FollowSymlinks } from '../../src/spool/admission.js';
import { setup } from './helpers.js';

/** Flips the path once it has decided on it: between the admission and the scan's stat. */
class FlipAfterDeciding extends Admission {
  flip: (() => Promise<void>) | null = null;
  override async admitted(p: string, link: string | null) {
    const r = await super.admitted(p, link);
    const flip = this.flip;
    this.flip = null;
    await flip?.();
    return r;
  }
}

/** A spool with a file inside and a secret outside it, under follow_symlinks `mode`; `toSecret` makes `p` a link to the secret. */
async function world(mode: FollowSymlinks, name: string) {
  // The spool's path is known once setup made it.
  const options = { spoolDir: '', sourceBases: [], exclude: [], followSymlinks: mode, onSkippedLink: () => undefined };
  const admission = new FlipAfterDeciding(options);
  const s = await setup({}, { admission });
  options.spoolDir = s.spool;
  const secret = path.join(path.dirname(s.spool), 'secret.ndjson');
  await writeFile(secret, '{"secret":"hunter2"}\n');
  const inside = path.join(s.spool, 'ev', 'real.log');
  await writeFile(inside, '{"real":1}\n');
  const p = path.join(s.spool, 'ev', name);
  const toSecret = async () => {
    await symlink(secret, `${p}.tmp`);
    await rename(`${p}.tmp`, p);
  };
  const lines = () => s.closed.flatMap((b) => b.body.toString().split('\n').filter(Boolean));
  return { s, admission, inside, p, toSecret, lines };
}

async function raced(mode: FollowSymlinks, listedAs: 'file' | 'inside link', when: 'before admission' | 'after admission' = 'before admission') {
  const { s, admission, inside, p, toSecret, lines } = await world(mode, 'link.ndjson');
  if (listedAs === 'file') await writeFile(p, '{"plain":1}\n');
  else await symlink(inside, p);
  const listing = await s.realList();
  expect(listing.paths).toContain(p);
  // The flip comes after the listing: the scan works from the listing taken before it.
  s.internals.listCandidates = async () => listing;
  if (when === 'before admission') await toSecret();
  else admission.flip = toSecret;
  await s.spooler.scan();
  await s.readAll();
  return { lines: lines() };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('follow_symlinks against a path that changes under the scan', () => {
  for (const [mode, listedAs] of [
    ['never', 'file'],
    ['inside', 'file'],
    ['inside', 'inside link'],
  ] as const) {
    it(`${mode}: listed as ${listedAs === 'file' ? 'a regular file' : 'a link inside the spool'}, a link to outside by the time it is opened: the secret is not read`, async () => {
      const r = await raced(mode, listedAs);
      expect(r.lines.join('\n')).not.toContain('hunter2');
    });
  }

  for (const [mode, listedAs] of [
    ['inside', 'file'],
    ['never', 'file'],
    ['inside', 'inside link'],
  ] as const) {
    it(`${mode}: admitted as ${listedAs === 'file' ? 'a regular file' : 'the file a link inside led to'}, a link to outside by the time the scan looks at it: the secret is not read`, async () => {
      const r = await raced(mode, listedAs, 'after admission');
      expect(r.lines.join('\n')).not.toContain('hunter2');
    });
  }

  it("inside: listed as a link, a regular file when its real path is taken, a link to outside again when that path is looked at: the secret is not read", async () => {
    // An audit flipped x.ndjson every 0.5 ms between a hard link of a file inside and a link to a secret: 200 secret rows.
    const { s, inside, p, toSecret, lines } = await world('inside', 'x.ndjson');
    await toSecret();
    const listing = await s.realList();
    expect(listing.links.get(p)).toBe(p);
    s.internals.listCandidates = async () => listing;
    // A regular file (a hard link of the inside one) when the scan takes its real path, a link to the secret right after.
    await link(inside, `${p}.tmp`);
    await rename(`${p}.tmp`, p);
    const realpath = fsPromises.realpath.bind(fsPromises);
    vi.spyOn(fsPromises, 'realpath').mockImplementation((async (q: string) => {
      const r = await realpath(q);
      if (q === p) await toSecret();
      return r;
    }) as typeof fsPromises.realpath);
    await s.spooler.scan();
    vi.restoreAllMocks();
    await s.readAll();
    expect(lines().join('\n')).not.toContain('hunter2');
  });
});
