// What a start-up found in the state_dir (StateStore.recovery): the batches
// it re-forms, where reading resumes, and what was damaged, for the agent to
// act on and recovery/report.ts to say by name.
import type { IntentInfo } from './replay.js';
import type { Progress } from './progress.js';

export interface Recovery {
  /** Batches sent (or about to be) before the stop and not acknowledged: re-form and resend, in id order. */
  intents: IntentInfo[];
  /** Where reading resumes per file key. */
  resumeAt: Map<string, number>;
  usedPrevCheckpoint: boolean;
  /** Neither checkpoint copy passed its check: the state was rebuilt from the journals (state/replay.ts replayState). */
  rebuiltFromJournals: boolean;
  /** Why checkpoint.json was not used, when .prev was (it failed its check); with a rebuild, why neither was. */
  checkpointProblem: string | null;
  /** The checkpoint was in the previous format (version 1, no CRC); it is rewritten as version 2. */
  upgradedCheckpoint: boolean;
  tornJournal: boolean;
  /** Damaged stretches of journals: the records in them are lost (their batches may be sent again; no line is skipped). */
  corruptJournal: Array<{ file: string; start: number; end: number }>;
  /**
   * With a damaged journal or a state rebuilt from the journals, what the lost records can touch, per spool file:
   * the ranges resent at this start (unacknowledged batches) and where
   * reading resumes (what was read after it is read and sent again).
   */
  affectedFiles: AffectedFile[];
}

export interface AffectedFile {
  datasource: string;
  file: string;
  /** Byte ranges [start, end) of unacknowledged batches, sent again now. */
  resend: Array<[number, number]>;
  /** Reading resumes here: bytes after it are read (and sent) again. */
  read_from: number;
}

/** Every file of the state with what a restart sends of it again (Recovery.affectedFiles). */
export function affectedFiles(progress: Progress, intents: Iterable<IntentInfo>, resumeAt: ReadonlyMap<string, number>): AffectedFile[] {
  const resend = new Map<string, Array<[number, number]>>();
  for (const i of intents) for (const r of i.ranges) (resend.get(r.file) ?? resend.set(r.file, []).get(r.file)!).push([r.start, r.end]);
  return [...progress.files.values()].map((fp) => ({
    datasource: fp.meta.ds,
    file: fp.meta.path,
    resend: (resend.get(fp.meta.key) ?? []).sort((a, b) => a[0] - b[0]),
    read_from: resumeAt.get(fp.meta.key) ?? fp.committed,
  }));
}
