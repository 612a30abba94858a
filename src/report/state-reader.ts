// Read-only view of a state_dir's progress, for `spoolship status` while the
// agent is down (or has no admin endpoint): the state store's own replay
// (src/state/replay.ts) without repairs. StateStore.open also relocates
// files, compacts into a new checkpoint and cuts torn journal tails, which a
// status command must not do, least of all under a running agent.
//
// Safe under a running agent: the checkpoint is replaced by rename (we read
// one version or the other), the live journal may end in a half-written
// record (ignored, not cut), and a journal deleted between listing and
// reading (two checkpoints went by) restarts the read.
import type { FileMeta } from '../state/journal.js';
import { Progress } from '../state/progress.js';
import { replayState } from '../state/replay.js';
import { queuedRangesByFile, type ByteRange } from './report.js';

const READ_ATTEMPTS = 3;

export interface FileProgressView {
  meta: FileMeta;
  committed: number;
  /** Where reading resumes at the next start (the end of the recorded ranges). */
  read: number;
}

export interface StateView {
  files: FileProgressView[];
  /** Recorded batches not done: re-formed and resent at the next start. */
  pendingBatches: number;
  /** Each file's ranges (by key) in the disk retry queue. */
  queuedRanges: Map<string, ByteRange[]>;
  usedPrevCheckpoint: boolean;
}

export async function readStateView(stateDir: string): Promise<StateView> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await readOnce(stateDir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= READ_ATTEMPTS) throw err;
    }
  }
}

async function readOnce(stateDir: string): Promise<StateView> {
  const replayed = await replayState(stateDir, new Progress(), { repair: false });
  const files: FileProgressView[] = [];
  for (const [key, fp] of replayed.progress.files) {
    files.push({ meta: fp.meta, committed: fp.committed, read: replayed.resumeAt.get(key) ?? fp.committed });
  }
  return { files, pendingBatches: replayed.intents.size, queuedRanges: queuedRangesByFile(replayed.queued.values()), usedPrevCheckpoint: replayed.usedPrevCheckpoint };
}
