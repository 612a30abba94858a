// Mistakes in the spool's layout that would otherwise be silent: a spool.dir
// that does not exist (yet), and a directory under it whose name is not a
// valid Data Source name, so nothing in it is ever read. Both are reported
// (WARN once, `status`), never errors: the layout may be deliberate, and a
// missing spool.dir is picked up when it appears.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { isDataSourceName } from '../util/datasource-name.js';

export interface SpoolLayout {
  /** spool.dir does not exist (or is not a directory). */
  missing: boolean;
  /** Directories directly under spool.dir that are skipped: not a valid Data Source name. */
  skippedDirs: string[];
  /** Names of the directories directly under spool.dir that are Data Sources (their metrics exist from now on, at 0). */
  dataSourceDirs: string[];
}

export async function checkLayout(spoolDir: string): Promise<SpoolLayout> {
  let entries;
  try {
    entries = await fsp.readdir(spoolDir, { withFileTypes: true });
  } catch {
    return { missing: true, skippedDirs: [], dataSourceDirs: [] };
  }
  const skippedDirs = entries
    .filter((e) => e.isDirectory() && !isDataSourceName(e.name))
    .map((e) => path.join(spoolDir, e.name))
    .sort();
  const dataSourceDirs = entries.filter((e) => e.isDirectory() && isDataSourceName(e.name)).map((e) => e.name);
  return { missing: false, skippedDirs, dataSourceDirs };
}

/** Log a change of the layout once: a newly missing spool.dir, a newly skipped directory, a spool.dir that appeared. */
export class LayoutReporter {
  private last: SpoolLayout = { missing: false, skippedDirs: [], dataSourceDirs: [] };
  private warned = new Set<string>();

  constructor(
    private readonly spoolDir: string,
    private readonly warn: (event: string, fields: Record<string, unknown>, message: string) => void,
    private readonly info: (event: string, fields: Record<string, unknown>, message: string) => void,
  ) {}

  get current(): SpoolLayout {
    return this.last;
  }

  report(now: SpoolLayout): void {
    if (now.missing && !this.last.missing) {
      this.warn('spool_dir_missing', { spool_dir: this.spoolDir }, 'spool.dir does not exist; it is picked up when it appears (check spool.dir)');
    } else if (!now.missing && this.last.missing) {
      this.info('spool_dir_found', { spool_dir: this.spoolDir }, 'spool.dir exists now; reading it');
    }
    for (const dir of now.skippedDirs) {
      if (this.warned.has(dir)) continue;
      this.warned.add(dir);
      this.warn('datasource_dir_skipped', { dir }, 'a directory under spool.dir is not a valid Data Source name ([A-Za-z_][A-Za-z0-9_]*, at most 255): its files are not read; rename it or route it with spool.sources');
    }
    this.last = now;
  }
}
