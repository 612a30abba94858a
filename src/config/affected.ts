// What `check-config` tells a user upgrading an existing setup: where this
// release's changed defaults and formats (CHANGELOG "Unreleased") touch what
// is on disk now, found the way `run` would find it.
// - spool.follow_symlinks (new, default `inside`): symlinks in the spool,
//   files or Data Source directories, that `run` will no longer read.
// - The checkpoint format: a version 1 checkpoint in state_dir is upgraded
//   at the next start, after which an older spoolship cannot read it.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { Admission } from '../spool/admission.js';
import { Router } from '../spool/routes.js';
import { listFiles } from '../spool/walk.js';
import { decodeCheckpoint } from '../state/checkpoint-format.js';
import { CHECKPOINT_FILE } from '../state/replay.js';
import type { Config } from './types.js';

export async function affectedByUpgrade(c: Readonly<Config>): Promise<string[]> {
  const warnings: string[] = [];
  if (c.spool.follow_symlinks !== 'any') {
    const router = new Router(c.spool.dir, c.spool.sources);
    const admission = new Admission({
      spoolDir: c.spool.dir,
      sourceBases: router.sourceBases(),
      exclude: c.spool.exclude,
      followSymlinks: c.spool.follow_symlinks,
      onSkippedLink: (file, target) =>
        warnings.push(
          `${file} is a symlink${target ? ` to ${target}` : ''} that run will not read (spool.follow_symlinks: ${c.spool.follow_symlinks}; ` +
            `new in this release, default inside: only targets inside spool.dir and the sources directories). ` +
            `Set spool.follow_symlinks: any to read it as before (CHANGELOG)`,
        ),
    });
    const listed = await listFiles(router.walkRoots());
    for (const p of listed.paths) {
      const link = listed.links.get(p) ?? null;
      if (link !== null && router.route(p)) await admission.admit(p, link);
    }
  }
  let text: string | null = null;
  try {
    text = await fsp.readFile(path.join(c.state_dir, CHECKPOINT_FILE), 'utf8');
  } catch {
    // No checkpoint (a fresh state_dir), or unreadable: run reports that.
  }
  if (text !== null) {
    const parsed = decodeCheckpoint<{ version: number }>(text);
    if (parsed.ok && parsed.legacy) {
      warnings.push(
        `state_dir ${c.state_dir} holds a checkpoint in the previous format (version 1): the next run reads it once and rewrites it as version 2 ` +
          `(nothing is shipped again); an older spoolship cannot read it afterwards (CHANGELOG "State format")`,
      );
    }
  }
  return warnings;
}
