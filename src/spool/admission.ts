// Which discovered paths may be read at all, decided once per path at
// discovery: spool.exclude, and where a symlink may point
// (spool.follow_symlinks). A symlink in the spool to the token file or
// /etc/passwd once shipped it to the platform: by default (`inside`) a link
// is followed only when its target's real path is inside the real path of
// spool.dir or of a sources glob's fixed leading directory.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import picomatch from 'picomatch';

export type FollowSymlinks = 'inside' | 'any' | 'never';

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
    if (this.excluded(p)) return false;
    if (link === null || this.o.followSymlinks === 'any') return true;
    if (this.o.followSymlinks === 'never') return this.skip(link, null, 'spool.follow_symlinks is never');
    const target = await fsp.realpath(p).catch(() => null);
    if (target === null) return false; // dangling: nothing to read (yet)
    if (this.excluded(target)) return false;
    for (const root of await this.roots()) if (target.startsWith(root)) return true;
    const linkTarget = link === p ? target : await fsp.realpath(link).catch(() => target);
    return this.skip(link, linkTarget, 'its target is outside spool.dir and the sources directories (spool.follow_symlinks: inside)');
  }

  /** Real paths of spool.dir and the sources' base directories, each ending in a separator (resolved per call: they may appear later). */
  private async roots(): Promise<string[]> {
    const dirs = [this.o.spoolDir, ...this.o.sourceBases];
    const real = await Promise.all(dirs.map((d) => fsp.realpath(d).catch(() => null)));
    return real.filter((r): r is string => r !== null).map((r) => (r.endsWith(path.sep) ? r : r + path.sep));
  }

  private skip(p: string, target: string | null, why: string): false {
    if (!this.warned.has(p)) {
      this.warned.add(p);
      this.o.onSkippedLink(p, target, why);
    }
    return false;
  }
}
