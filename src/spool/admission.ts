// Which discovered paths may be read at all, decided once per path at
// discovery: spool.exclude, and where a symlink may point
// (spool.follow_symlinks). A symlink in the spool to the token file or
// /etc/passwd once shipped it to the platform: by default (`inside`) a link
// is followed only when its target's real path is inside the real path of
// spool.dir or of a sources glob's fixed leading directory.
//
// The decision is for one file, not for the path: a path flipped between a
// file (or a link inside) and a link to a secret, between the listing and
// the open, shipped the secret. `admitted` gives the identity (dev, ino) of
// the file it decided on (or says the path must be no link); the scan reads
// a path only while it names that file (classify.ts look), and the tailer
// checks it at every open.
import { promises as fsp, type Stats } from 'node:fs';
import path from 'node:path';
import picomatch from 'picomatch';

export type FollowSymlinks = 'inside' | 'any' | 'never';

/**
 * The file a path was admitted for: through a link, the file it led to;
 * 'not a link': the path itself, so long as it is no link (the scan looks
 * with lstat, no extra call); 'unchecked': any file (follow_symlinks: any).
 */
export type AdmittedFile = { dev: number; ino: number } | 'not a link' | 'unchecked';

export interface AdmissionOptions {
  spoolDir: string;
  /** Fixed leading directories of the spool.sources globs. */
  sourceBases: string[];
  exclude: readonly string[];
  followSymlinks: FollowSymlinks;
  /** A link that is not followed: WARN once per path. */
  onSkippedLink(path: string, target: string | null, why: string): void;
}

export class Admission {
  private readonly excluded: (p: string) => boolean;
  private readonly warned = new Set<string>();

  constructor(private readonly o: AdmissionOptions) {
    const matchers = o.exclude.map((g) => picomatch(g, { dot: true }));
    this.excluded = (p) => matchers.some((m) => m(p));
  }

  /**
   * May `p` be read? `link`: the symlink it is reached through (itself, or
   * the linked directory it is in), null when none. A skipped link is
   * reported once, by the link (one WARN for a linked directory, not one per
   * file in it).
   */
  async admit(p: string, link: string | null): Promise<boolean> {
    return (await this.admitted(p, link)) !== null;
  }

  /** admit(), with the file it was decided for (null: not admitted). */
  async admitted(p: string, link: string | null): Promise<AdmittedFile | null> {
    if (this.excluded(p)) return null;
    if (this.o.followSymlinks === 'any') return 'unchecked';
    if (link === null) return 'not a link';
    if (this.o.followSymlinks === 'never') return this.skip(link, null, 'spool.follow_symlinks is never');
    const target = await fsp.realpath(p).catch(() => null);
    if (target === null) return null; // dangling: nothing to read (yet)
    if (this.excluded(target)) return null;
    // The real path names no link; one there now (the path flipped since) is not judged: not this scan.
    const st = await fsp.lstat(target).catch(() => null);
    if (st === null || !st.isFile()) return null;
    if (await this.insideRoots(target)) return identity(st);
    const linkTarget = link === p ? target : await fsp.realpath(link).catch(() => target);
    return this.skip(link, linkTarget, 'its target is outside spool.dir and the sources directories (spool.follow_symlinks: inside)');
  }

  /**
   * Reached through `link`, is `p` a file whose real path lies outside
   * spool.dir and the sources' base directories? Only follow_symlinks: any
   * admits one; on_complete: delete never deletes it (completion.ts).
   */
  async linkedOutside(p: string, link: string | null): Promise<boolean> {
    if (link === null || this.o.followSymlinks !== 'any') return false;
    const target = await fsp.realpath(p).catch(() => null);
    return target !== null && !(await this.insideRoots(target));
  }

  /** Is the real path `target` inside spool.dir or a sources base directory? */
  private async insideRoots(target: string): Promise<boolean> {
    return (await this.roots()).some((root) => target.startsWith(root));
  }

  /** Real paths of spool.dir and the sources' base directories, each ending in a separator (resolved per call: they may appear later). */
  private async roots(): Promise<string[]> {
    const dirs = [this.o.spoolDir, ...this.o.sourceBases];
    const real = await Promise.all(dirs.map((d) => fsp.realpath(d).catch(() => null)));
    return real.filter((r): r is string => r !== null).map((r) => (r.endsWith(path.sep) ? r : r + path.sep));
  }

  private skip(p: string, target: string | null, why: string): null {
    if (!this.warned.has(p)) {
      this.warned.add(p);
      this.o.onSkippedLink(p, target, why);
    }
    return null;
  }
}

function identity(st: Stats): { dev: number; ino: number } {
  return { dev: st.dev, ino: st.ino };
}
