// One replay of a state_dir (checkpoint, then the journals after it) into
// per-file progress, for its two readers: the state store at start-up
// (store.ts, which then relocates files and compacts) and `spoolship status`
// beside a running agent (report/state-reader.ts, which must not write).
// The journal and checkpoint formats are read by journal.ts and
// checkpoint-format.ts; this module owns what the records mean: which
// ranges belong to which batch, what is done, where reading resumes, and
// which unfinished batches recovery re-forms.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { StateCorruptError } from '../errors.js';
import { decodeCheckpoint } from './checkpoint-format.js';
import { journalPath, listJournals, readJournal, type FileMeta, type IntentRange, type JournalRecord, type QueuedIntent } from './journal.js';
import { DEAD_LETTER_OWNER, type Progress, type RangeEntry } from './progress.js';

export const CHECKPOINT_FILE = 'checkpoint.json';

export interface IntentInfo {
  id: number;
  ds: string;
  ranges: IntentRange[];
  at: number;
  /** Lines of the batch (absent in intents written before it existed): what is lost when its ranges cannot be re-formed. */
  lines?: number;
  /** Lines read again for a damaged queue record: their ranges are committed already, so the intent is kept by itself. */
  resend?: boolean;
}

export interface CheckpointFile {
  version: number;
  journal_seq: number;
  prev_journal_seq: number;
  next_id: number;
  files: Array<FileMeta & { committed: number; ranges: Array<[number, number, number, boolean]>; seen?: SeenStat }>;
  intents: IntentInfo[];
  /** Batches in the disk queue (absent in checkpoints before queued intents existed). */
  queued?: QueuedIntent[];
  /**
   * The state was rebuilt from the journals and no scan has ended since:
   * a file it does not know is read from its start whatever `start_at`
   * says (it may be one the lost checkpoint knew).
   */
  unknown_files_from_start?: boolean;
}

/**
 * [size, mtimeMs, ctimeMs] of a file when its identity was last checked. A
 * file that still has exactly these (and its device and inode) is the same
 * file: a new file under a reused inode has a new ctime, as does a rename or
 * a truncation. Start-up then checks 10,000 idle files with one stat each
 * instead of reading each one's first bytes.
 */
export type SeenStat = [number, number, number];

export interface ReplayedState {
  /** Filled in place: the caller's Progress. */
  progress: Progress;
  /** Batches recorded and not acknowledged, not abandoned at a gap: recovery re-forms and resends them. */
  intents: Map<number, IntentInfo>;
  queued: Map<number, QueuedIntent>;
  nextId: number;
  /** Last identity-checked stat per file key, as the checkpoint kept it. */
  seen: Map<string, SeenStat>;
  /** Where reading resumes per file key. */
  resumeAt: Map<string, number>;
  usedPrevCheckpoint: boolean;
  /** Neither checkpoint copy passed its check: the state is what the journals say (replayState). */
  rebuiltFromJournals: boolean;
  /** Files not in the state are read from their start at the next scan, whatever `start_at` says. */
  unknownFilesFromStart: boolean;
  /** No checkpoint and no journal record: the first start on this state_dir (where `start_at: end` applies). */
  firstStart: boolean;
  checkpointProblem: string | null;
  upgradedCheckpoint: boolean;
  tornJournal: boolean;
  corruptJournal: Array<{ file: string; start: number; end: number }>;
  /** The journal seq the checkpoint names (0 without a checkpoint). */
  checkpointSeq: number;
  /** The journals read, by seq. */
  journalSeqs: number[];
}

/**
 * Replay `stateDir` into `progress`. With `repair`, a torn journal tail is
 * cut (the store, holding the lock); without it nothing is written (status).
 *
 * When neither checkpoint copy passes its check, the state is rebuilt from
 * every journal there is. A file's progress counts only from a byte the
 * journals account for: a file they follow from its first byte (or from
 * where `start_at: end` began it: the `f` record's `from`) resumes exactly;
 * one they take up later starts at 0, so the gap before their first record
 * is read again (its batches after it are abandoned by settle()). A file
 * they do not name at all is unknown, and unknown files are read from their
 * start (`unknownFilesFromStart`), never from their end. Without a journal
 * record to rebuild from it throws StateCorruptError (exit 1: how to start
 * over).
 */
export async function replayState(stateDir: string, progress: Progress, { repair }: { repair: boolean }): Promise<ReplayedState> {
  const { cp, usedPrev, legacy, problems } = await readCheckpoint(stateDir);
  const rebuilt = cp === null && problems.length > 0;
  const st: ReplayedState = {
    progress,
    intents: new Map(),
    queued: new Map(),
    nextId: 1,
    seen: new Map(),
    resumeAt: new Map(),
    usedPrevCheckpoint: usedPrev,
    rebuiltFromJournals: rebuilt,
    unknownFilesFromStart: rebuilt || cp?.unknown_files_from_start === true,
    firstStart: false,
    checkpointProblem: problems.length > 0 ? problems.join('; ') : null,
    upgradedCheckpoint: legacy,
    tornJournal: false,
    corruptJournal: [],
    checkpointSeq: cp?.journal_seq ?? 0,
    journalSeqs: [],
  };
  const doneIds = new Set<number>();
  if (cp) {
    st.nextId = cp.next_id;
    for (const f of cp.files) {
      const { committed, ranges, seen, ...meta } = f;
      const fp = progress.addFile(meta, committed);
      if (isSeenStat(seen)) st.seen.set(meta.key, seen);
      for (const [start, end, owner, done] of ranges) {
        fp.entries.push({ key: meta.key, start, end, owner, done, recorded: true });
      }
    }
    for (const i of cp.intents) st.intents.set(i.id, i);
    for (const q of cp.queued ?? []) st.queued.set(q.id, q);
  }
  const startSeq = cp ? (usedPrev ? cp.prev_journal_seq || cp.journal_seq : cp.journal_seq) : 0;
  st.journalSeqs = (await listJournals(stateDir)).filter((s) => s >= startSeq);
  let records = 0;
  for (const s of st.journalSeqs) {
    const file = journalPath(stateDir, s);
    const read = await readJournal(file, repair);
    st.tornJournal ||= read.tornTail;
    for (const c of read.corrupt) st.corruptJournal.push({ file, ...c });
    for (const r of read.records) apply(st, r, doneIds);
    records += read.records.length;
  }
  st.firstStart = cp === null && problems.length === 0 && records === 0;
  if (rebuilt && records === 0) throw new StateCorruptError(stateDir, [...problems, `no journal record to rebuild the state from (${st.journalSeqs.length} journal files)`]);
  settle(st);
  return st;
}

function isSeenStat(v: unknown): v is SeenStat {
  return Array.isArray(v) && v.length === 3 && v.every((n) => typeof n === 'number');
}

function apply(st: ReplayedState, r: JournalRecord, doneIds: Set<number>): void {
  const progress = st.progress;
  switch (r.t) {
    case 'f': {
      const { t: _t, from, ...meta } = r;
      const fp = progress.files.get(meta.key);
      if (fp) fp.meta = meta;
      else progress.addFile(meta, from ?? 0);
      return;
    }
    case 'q': {
      const { t: _t, ...q } = r;
      st.queued.set(q.id, q);
      // Pieces of a batch cut by 400s are queued under ids of their own, without an intent.
      st.nextId = Math.max(st.nextId, q.id + 1);
      return;
    }
    case 'qa':
      st.queued.delete(r.id);
      return;
    case 'i': {
      st.nextId = Math.max(st.nextId, r.id + 1);
      if (doneIds.has(r.id)) return;
      st.intents.set(r.id, { id: r.id, ds: r.ds, ranges: r.ranges, at: r.at, ...(r.lines !== undefined ? { lines: r.lines } : {}), ...(r.resend ? { resend: true } : {}) });
      for (const rg of r.ranges) {
        progress.files.get(rg.file)?.entries.push({ key: rg.file, start: rg.start, end: rg.end, owner: r.id, done: false, recorded: true });
      }
      return;
    }
    case 'a': {
      doneIds.add(r.id);
      // Only the files the intent names (a scan of every file per ack made
      // replaying a long journal quadratic with 10,000 files).
      const intent = st.intents.get(r.id);
      st.intents.delete(r.id);
      const files = intent ? new Set(intent.ranges.map((rg) => progress.files.get(rg.file))) : progress.files.values();
      for (const fp of files) for (const e of fp?.entries ?? []) if (e.owner === r.id) e.done = true;
      return;
    }
    case 'd':
      for (const rg of r.ranges) {
        progress.files.get(rg.file)?.entries.push({ key: rg.file, start: rg.start, end: rg.end, owner: DEAD_LETTER_OWNER, done: true, recorded: true });
      }
      return;
    case 'x':
      progress.forget(r.key);
      return;
  }
}

/** Order entries, cut at gaps, drop what is committed, and compute resume offsets. */
function settle(st: ReplayedState): void {
  // A gap means bytes from there on were claimed but never recorded (a
  // crash between claiming a dead-letter range and recording it). Reading
  // resumes at the gap, so every unfinished batch recorded after it is
  // abandoned (read again as new data), in every file it touches.
  const abandoned = new Set<number>();
  let changed = true;
  while (changed) {
    changed = false;
    for (const fp of st.progress.files.values()) {
      fp.entries.sort((a, b) => a.start - b.start);
      let pos = fp.committed;
      let cut = fp.entries.length;
      const kept: RangeEntry[] = [];
      for (let i = 0; i < fp.entries.length; i++) {
        const e = fp.entries[i]!;
        if (e.end <= pos) continue; // already committed
        if (e.start !== pos || abandoned.has(e.owner)) {
          cut = i;
          break;
        }
        kept.push(e);
        pos = e.end;
      }
      for (let i = cut; i < fp.entries.length; i++) {
        const e = fp.entries[i]!;
        if (e.owner !== DEAD_LETTER_OWNER && !e.done && !abandoned.has(e.owner)) {
          abandoned.add(e.owner);
          changed = true;
        }
      }
      fp.entries = kept;
    }
  }
  for (const id of abandoned) st.intents.delete(id);
  const resumeAt = st.resumeAt;
  for (const [key, fp] of st.progress.files) {
    let n = 0;
    while (n < fp.entries.length && fp.entries[n]!.done) n++;
    if (n > 0) {
      fp.committed = fp.entries[n - 1]!.end;
      fp.entries.splice(0, n);
    }
    resumeAt.set(key, fp.entries.length ? fp.entries[fp.entries.length - 1]!.end : fp.committed);
    st.progress.adoptEntries(fp.entries);
  }
}

/**
 * The checkpoint of a state_dir, or its `.prev` when it is unreadable; null
 * when there is none (a fresh state_dir, `problems` empty) or when neither
 * copy passes its check (`problems` says why, per file: the caller rebuilds
 * from the journals, never "start at end"). Read-only (the status command
 * uses it next to a running agent).
 */
async function readCheckpoint(stateDir: string): Promise<{ cp: CheckpointFile | null; usedPrev: boolean; legacy: boolean; problems: string[] }> {
  const file = path.join(stateDir, CHECKPOINT_FILE);
  const problems: string[] = [];
  for (const [f, isPrev] of [
    [file, false],
    [`${file}.prev`, true],
  ] as const) {
    let text: string;
    try {
      text = await fsp.readFile(f, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    const parsed = decodeCheckpoint<CheckpointFile>(text);
    if (parsed.ok) return { cp: parsed.value, usedPrev: isPrev, legacy: parsed.legacy, problems };
    problems.push(`${f}: ${parsed.why}`);
  }
  return { cp: null, usedPrev: false, legacy: false, problems };
}
