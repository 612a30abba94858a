// `dead-letter purge`: remove the selected records for good. Safe while the
// agent runs, by the same steps as a replay (replay.ts): take the live file
// away (rename), append every record that stays back to a live file, then
// remove the taken one. A crash leaves the taken file, which `list` shows and
// the next purge or replay processes: no record that should stay is lost.
import { promises as fsp } from 'node:fs';
import { FatalIoError } from '../errors.js';
import type { LockEvent } from '../state/lock.js';
import { fsyncDir } from '../util/fsx.js';
import { listDeadLetterFiles, liveFile, matches, pendingEntries, replayingFile, type Filter } from './files.js';
import { clearDone } from './replay-progress.js';
import { acquireReplayLock, appendDurably, exists, takeLiveFile } from './replay.js';

export interface PurgeSummary {
  removed: number;
}

/** How many records the filter selects now (for the confirmation question). */
export async function countSelected(dir: string, filter: Filter): Promise<number> {
  let n = 0;
  for (const f of await listDeadLetterFiles(dir, filter.datasource)) {
    for await (const e of pendingEntries(f.path)) if (e.rec && matches(e.rec, filter)) n++;
  }
  return n;
}

export async function purgeDeadLetters(dir: string, filter: Filter, onLockEvent?: (e: LockEvent) => void): Promise<PurgeSummary> {
  const sum: PurgeSummary = { removed: 0 };
  if ((await listDeadLetterFiles(dir, filter.datasource)).length === 0) return sum;
  const lock = await acquireReplayLock(dir, onLockEvent);
  try {
    const names = [...new Set((await listDeadLetterFiles(dir, filter.datasource)).map((f) => f.ds))];
    for (const ds of names) {
      await purgeTaken(dir, ds, filter, sum);
      if (await takeLiveFile(dir, ds, filter)) await purgeTaken(dir, ds, filter, sum);
    }
    return sum;
  } finally {
    await lock.release();
  }
}

/** The lines that stay are put back a window at a time (a file is never read whole). */
const PURGE_WINDOW_BYTES = 8 * 1024 * 1024;

async function purgeTaken(dir: string, ds: string, filter: Filter, sum: PurgeSummary): Promise<void> {
  const taken = replayingFile(dir, ds);
  if (!(await exists(taken))) return;
  let keep: string[] = [];
  let bytes = 0;
  const flush = async () => {
    try {
      await appendDurably(dir, liveFile(dir, ds), keep);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? String(err);
      throw new FatalIoError(`could not put ${keep.length} record(s) back into ${liveFile(dir, ds)} (${code}); they are safe in ${taken}: fix the cause and run purge again`, err);
    }
    keep = [];
    bytes = 0;
  };
  // Entries an interrupted replay finished are gone already (replay-progress.ts).
  for await (const e of pendingEntries(taken)) {
    // Unreadable lines are kept: they cannot be shown to match.
    if (e.rec && matches(e.rec, filter)) sum.removed++;
    else {
      keep.push(e.raw);
      bytes += e.raw.length;
      if (bytes >= PURGE_WINDOW_BYTES) await flush();
    }
  }
  await flush();
  await clearDone(taken);
  await fsp.rm(taken);
  await fsyncDir(dir);
}
