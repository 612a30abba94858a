// How far an interrupted `dead-letter replay` got in a taken file
// (`<ds>.ndjson.replaying`, replay.ts; files.ts pendingEntries skips them): how many of its entries are done
// (their windows' acknowledged lines gone, the rest appended to the live
// file). The next replay, a purge and a listing skip them, so a replay cut
// short by a crash resends at most the window under way, not every line
// acknowledged before it (docs/operations-cli.md "Dead letters"). Kept per
// taken file with its inode and size: a file other than the one counted is
// read whole, as before (duplicates, never a gap). A damaged progress file
// counts nothing done.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { fsyncDir } from '../util/fsx.js';

export const REPLAY_PROGRESS_FILE = 'replay-progress.json';

type Done = Record<string, { ino: number; size: number; done: number }>;

async function readDone(dir: string): Promise<Done> {
  try {
    const v: unknown = JSON.parse(await fsp.readFile(path.join(dir, REPLAY_PROGRESS_FILE), 'utf8'));
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Done) : {};
  } catch {
    return {};
  }
}

async function writeDone(dir: string, done: Done): Promise<void> {
  const file = path.join(dir, REPLAY_PROGRESS_FILE);
  if (Object.keys(done).length === 0) await fsp.rm(file, { force: true });
  else {
    const tmp = `${file}.tmp`;
    const fh = await fsp.open(tmp, 'w');
    try {
      await fh.writeFile(JSON.stringify(done));
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fsp.rename(tmp, file);
  }
  await fsyncDir(dir);
}

/** Entries of the taken file `taken` that are done (0 when none, or when it is not the file counted). */
export async function entriesDone(taken: string): Promise<number> {
  const d = (await readDone(path.dirname(taken)))[path.basename(taken)];
  if (!d || !Number.isSafeInteger(d.done)) return 0;
  const st = await fsp.stat(taken).catch(() => null);
  return st && st.ino === d.ino && st.size === d.size ? d.done : 0;
}

/** The first `done` entries of `taken` are done (durably: fsynced, then renamed into place). */
export async function markDone(taken: string, done: number): Promise<void> {
  const dir = path.dirname(taken);
  const st = await fsp.stat(taken);
  await writeDone(dir, { ...(await readDone(dir)), [path.basename(taken)]: { ino: st.ino, size: st.size, done } });
}

/** `taken` is about to go: forget its count first, so that a crash in between never skips entries of a file taken later under the same name. */
export async function clearDone(taken: string): Promise<void> {
  const dir = path.dirname(taken);
  const all = await readDone(dir);
  if (!(path.basename(taken) in all)) return;
  delete all[path.basename(taken)];
  await writeDone(dir, all);
}
