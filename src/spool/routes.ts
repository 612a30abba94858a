// Which Data Source a path belongs to. `spool.sources` routes come first
// (first matching source wins); otherwise `<spool.dir>/<datasource>/*.ndjson`,
// exactly one level deep.
import path from 'node:path';
import picomatch from 'picomatch';
import type { SourceRoute } from '../config/types.js';
import { isDataSourceName } from '../util/datasource-name.js';


interface CompiledSource {
  datasource: string;
  matchers: Array<(p: string) => boolean>;
  /** Static directories under which the globs can match (walk roots for the scan). */
  bases: Array<{ dir: string; recursive: boolean; depth: number }>;
}

export class Router {
  private readonly sources: CompiledSource[];
  /** `spoolDir` and a separator: the scan's paths start with it. */
  private readonly prefix: string;

  constructor(
    readonly spoolDir: string,
    sources: readonly SourceRoute[],
  ) {
    this.prefix = spoolDir.endsWith(path.sep) ? spoolDir : spoolDir + path.sep;
    this.sources = sources.map((s) => ({
      datasource: s.datasource,
      matchers: s.include.map((g) => picomatch(g, { dot: false })),
      bases: s.include.map(globBase),
    }));
  }

  route(absPath: string): string | null {
    for (const s of this.sources) if (s.matchers.some((m) => m(absPath))) return s.datasource;
    // The scan's own paths (spoolDir + "/ds/name"): no path.relative, which
    // resolves both paths and made a third of a 10,000-file scan's garbage.
    if (absPath.startsWith(this.prefix)) {
      const slash = absPath.indexOf(path.sep, this.prefix.length);
      if (slash > this.prefix.length && absPath.indexOf(path.sep, slash + 1) === -1) {
        const ds = absPath.slice(this.prefix.length, slash);
        const name = absPath.slice(slash + 1);
        if (ds !== '.' && ds !== '..' && name !== '' && name !== '.' && name !== '..') return defaultRoute(ds, name);
      }
    }
    const rel = path.relative(this.spoolDir, absPath);
    const parts = rel.split(path.sep);
    if (parts.length !== 2 || rel.startsWith('..')) return null;
    const [ds, name] = parts as [string, string];
    return defaultRoute(ds, name);
  }

  /** The fixed leading directories of the sources globs. */
  sourceBases(): string[] {
    return this.sources.flatMap((s) => s.bases.map((b) => b.dir));
  }

  /** Directories the scan walks, with how deep. */
  walkRoots(): Array<{ dir: string; depth: number }> {
    const roots = [{ dir: this.spoolDir, depth: 2 }];
    for (const s of this.sources) for (const b of s.bases) roots.push({ dir: b.dir, depth: b.recursive ? 32 : b.depth });
    return roots;
  }

  /** How deep the scan walks below `dir` (walk.ts depth): 0 where it lists nothing in it. */
  walkDepthBelow(dir: string): number {
    let most = 0;
    for (const root of this.walkRoots()) {
      const rel = path.relative(root.dir, dir);
      if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) continue;
      most = Math.max(most, root.depth - rel.split(path.sep).length);
    }
    return most;
  }
}

/** `<spool.dir>/<ds>/<name>`: a Data Source name, and a visible `.ndjson` file. */
function defaultRoute(ds: string, name: string): string | null {
  return isDataSourceName(ds) && name.endsWith('.ndjson') && !name.startsWith('.') ? ds : null;
}

/** The longest leading part of a glob with no glob characters, and how many levels below it can match. */
function globBase(glob: string): { dir: string; recursive: boolean; depth: number } {
  const parts = glob.split('/');
  const isMagic = (p: string) => /[*?[\]{}()!+@]/.test(p);
  let i = 0;
  while (i < parts.length - 1 && !isMagic(parts[i]!)) i++;
  const dir = parts.slice(0, i).join('/') || '/';
  const rest = parts.slice(i);
  return { dir, recursive: rest.includes('**'), depth: rest.length };
}
