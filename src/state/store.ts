// Durable progress: the journal (journal.ts) plus a compacted checkpoint.
//
// On-disk layout in state_dir:
//   checkpoint.json        {"version":2,"journal_seq":S,"next_id":N,"files":[...],"intents":[...]} + a CRC line (checkpoint-format.ts)
//   checkpoint.json.prev   the previous checkpoint, used when checkpoint.json is unreadable
//   journal-<seq>.log      framed records appended since the checkpoint that names seq
//
// Invariants:
// - The checkpoint is replaced atomically (util/fsx.ts atomicWrite).
// - Journals are deleted only when older than the seq named by the *previous*
//   checkpoint, so falling back to `.prev` still finds every journal it needs.
// - Recovery never skips bytes: a gap in a file's recorded ranges (a crash
//   between claiming a dead-letter range and recording it) moves the resume
//   offset back to the gap, and batches recorded after it are read again.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { StateCorruptError } from '../errors.js';
import { sameContentStart } from '../spool/identity.js';
import { listInodes } from '../spool/walk.js';
import { mapLimit } from '../util/concurrency.js';
import { atomicWrite } from '../util/fsx.js';
import {
  JournalWriter,
  journalPath,
  listJournals,
  readJournal,
  type FileMeta,
  type JournalRecord,
  type QueuedIntent,
  type RangeRecord,
} from './journal.js';
import { CHECKPOINT_VERSION, decodeCheckpoint, encodeCheckpoint } from './checkpoint-format.js';
import { DEAD_LETTER_OWNER, Progress, type FileProgress, type RangeEntry } from './progress.js';

export const CHECKPOINT_FILE = 'checkpoint.json';

export interface IntentInfo {
  id: number;
  ds: string;
  ranges: RangeRecord[];
  at: number;
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
}

export interface Recovery {
  /** Batches sent (or about to be) before the stop and not acknowledged: re-form and resend, in id order. */
  intents: IntentInfo[];
  /** Where reading resumes per file key. */
  resumeAt: Map<string, number>;
  usedPrevCheckpoint: boolean;
  /** Why checkpoint.json was not used, when .prev was (it failed its check). */
  checkpointProblem: string | null;
  /** The checkpoint was in the previous format (version 1, no CRC); it is rewritten as version 2. */
  upgradedCheckpoint: boolean;
  tornJournal: boolean;
  /** Damaged stretches of journals: the records in them are lost (their batches may be sent again; no line is skipped). */
  corruptJournal: Array<{ file: string; start: number; end: number }>;
}

/** What an identity check saw of a file. */
interface VerifiedStat {
  path: string;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

/**
 * [size, mtimeMs, ctimeMs] of a file when its identity was last checked. A
 * file that still has exactly these (and its device and inode) is the same
 * file: a new file under a reused inode has a new ctime, as does a rename or
 * a truncation. Start-up then checks 10,000 idle files with one stat each
 * instead of reading each one's first bytes.
 */
export type SeenStat = [number, number, number];

export function sameAsSeen(seen: SeenStat | undefined, st: { size: number; mtimeMs: number; ctimeMs: number }): boolean {
  return seen !== undefined && st.size === seen[0] && st.mtimeMs === seen[1] && st.ctimeMs === seen[2];
}

/** Files checked at once during start-up. */
const RELOCATE_CONCURRENCY = 32;

export interface StateStoreOptions {
  stateDir: string;
  now: () => number;
  onBackgroundError: (err: unknown) => void;
}

export class StateStore {
  readonly progress = new Progress();
  private readonly intents = new Map<number, IntentInfo>();
  private readonly queued = new Map<number, QueuedIntent>();
  private nextId = 1;
  private journal!: JournalWriter;
  private seq = 0;
  private prevSeq = 0;
  recovery!: Recovery;
  /** Last identity-checked stat per file: from the spooler while running, else as loaded. */
  private readonly seen = new Map<string, SeenStat>();
  private seenNow: (key: string) => SeenStat | undefined = () => undefined;

  private constructor(private readonly opts: StateStoreOptions) {}

  static async open(opts: StateStoreOptions): Promise<StateStore> {
    const store = new StateStore(opts);
    await store.load();
    return store;
  }

  newBatchId(): number {
    return this.nextId++;
  }

  trackFile(meta: FileMeta, committed: number): FileProgress {
    const fp = this.progress.addFile(meta, committed);
    this.journal.append({ t: 'f', ...meta });
    return fp;
  }

  updateFile(meta: FileMeta): void {
    const fp = this.progress.files.get(meta.key);
    if (!fp) return;
    fp.meta = meta;
    this.journal.append({ t: 'f', ...meta });
  }

  /** Record a closed batch's ranges durably (before its first send). */
  async recordIntent(id: number, ds: string): Promise<IntentInfo> {
    const info: IntentInfo = { id, ds, ranges: this.progress.rangesOf(id), at: this.opts.now() };
    this.intents.set(id, info);
    await this.journal.appendDurable({ t: 'i', ...info });
    this.progress.markRecorded(id);
    return info;
  }

  /** A batch is done (acknowledged, dead-lettered, or queued durably): group-committed. */
  completeBatch(id: number): string[] {
    this.intents.delete(id);
    this.journal.append({ t: 'a', id });
    return this.progress.markOwnerDone(id);
  }

  /** A batch is durably in the disk queue: keep its ranges and their CRCs until the queue is done with it. */
  async recordQueued(q: QueuedIntent): Promise<void> {
    this.queued.set(q.id, q);
    await this.journal.appendDurable({ t: 'q', ...q });
  }

  /** The queue delivered (or dead-lettered, or gave up on) a batch. */
  completeQueued(id: number): void {
    if (!this.queued.delete(id)) return;
    this.journal.append({ t: 'qa', id });
  }

  queuedIntents(): QueuedIntent[] {
    return [...this.queued.values()];
  }

  /** Lines of a damaged queue record, to be sent again from the spool: a new intent of their own (durable before the send). */
  async recordResend(ds: string, ranges: RangeRecord[]): Promise<IntentInfo> {
    const info: IntentInfo = { id: this.nextId++, ds, ranges, at: this.opts.now(), resend: true };
    this.intents.set(info.id, info);
    await this.journal.appendDurable({ t: 'i', ...info });
    return info;
  }

  /** A dead-lettered range is durable in the dead-letter store: record it and let the offset pass it. */
  completeDeadLetterRange(key: string, entry: RangeEntry): void {
    this.journal.append({ t: 'd', ranges: [{ file: key, start: entry.start, end: entry.end }] });
    this.progress.markEntryDone(key, entry);
  }

  forgetFile(key: string): void {
    this.progress.forget(key);
    this.journal.append({ t: 'x', key });
  }

  /** Ranges of a recorded batch (to locate its lines for dead letters). */
  intentRanges(id: number): RangeRecord[] | undefined {
    return this.intents.get(id)?.ranges;
  }

  /** The file ranges of a batch in flight or in the disk queue (where its lines came from). */
  batchRanges(id: number): readonly RangeRecord[] | undefined {
    return this.intents.get(id)?.ranges ?? this.queued.get(id)?.ranges;
  }


  get journalBytes(): number {
    return this.journal.bytes;
  }

  /** Flush acks now (graceful stop, tests). */
  async flush(): Promise<void> {
    await this.journal.flush();
  }

  /** Compact: start a new journal, write the checkpoint, drop journals no checkpoint needs. */
  async checkpoint(): Promise<void> {
    const old = this.journal;
    const newSeq = this.seq + 1;
    const next = new JournalWriter(journalPath(this.opts.stateDir, newSeq), this.opts.onBackgroundError);
    await next.open();
    // From here on records go to the new journal; the snapshot below covers
    // everything appended to the old one.
    this.journal = next;
    const snapshot = this.snapshot(newSeq, this.seq);
    await old.close();
    await atomicWrite(path.join(this.opts.stateDir, CHECKPOINT_FILE), encodeCheckpoint(snapshot));
    const keepFrom = this.seq;
    this.prevSeq = this.seq;
    this.seq = newSeq;
    for (const s of await listJournals(this.opts.stateDir)) {
      if (s < keepFrom) await fsp.rm(journalPath(this.opts.stateDir, s), { force: true });
    }
  }

  /**
   * A file's last identity-checked stat as start-up left it (from the
   * checkpoint, refreshed by relocateFiles). A file at its recorded path
   * with exactly this stat is that file: the first scan need not read its
   * first bytes again.
   */
  seenAtStart(key: string): SeenStat | undefined {
    return this.seen.get(key);
  }

  /** Where checkpoints take each file's current identity-checked stat (the spooler's tailers). */
  setSeenProvider(fn: (key: string) => SeenStat | undefined): void {
    this.seenNow = fn;
  }

  async close(): Promise<void> {
    await this.journal.close();
  }

  private snapshot(journalSeq: number, prevSeq: number): CheckpointFile {
    const files: CheckpointFile['files'] = [];
    const live = new Set<number>();
    for (const fp of this.progress.files.values()) {
      const ranges: Array<[number, number, number, boolean]> = [];
      let pos = fp.committed;
      for (const e of fp.entries) {
        // An intent still being group-committed to the old journal counts as
        // recorded: checkpoint() closes (flushes) the old journal before the
        // snapshot is written. Cutting the snapshot there instead dropped the
        // intent (its journal is not replayed after this checkpoint), so the
        // next recovery found a gap and re-sent everything acked after it.
        const recorded = e.recorded || (e.owner !== DEAD_LETTER_OWNER && this.intents.has(e.owner));
        if (!recorded || e.start !== pos) break;
        ranges.push([e.start, e.end, e.owner, e.done]);
        if (!e.done && e.owner !== DEAD_LETTER_OWNER) live.add(e.owner);
        pos = e.end;
      }
      const seen = this.seenNow(fp.meta.key) ?? this.seen.get(fp.meta.key);
      files.push({ ...fp.meta, committed: fp.committed, ranges, ...(seen ? { seen } : {}) });
    }
    const intents = [...this.intents.values()].filter((i) => live.has(i.id) || i.resend);
    return {
      version: CHECKPOINT_VERSION,
      journal_seq: journalSeq,
      prev_journal_seq: prevSeq,
      next_id: this.nextId,
      files,
      intents,
      queued: [...this.queued.values()],
    };
  }

  private async load(): Promise<void> {
    const dir = this.opts.stateDir;
    await fsp.mkdir(dir, { recursive: true });
    const { cp, usedPrev, legacy, problem } = await readCheckpoint(dir);
    const progress = this.progress;
    const doneIds = new Set<number>();
    if (cp) {
      this.nextId = cp.next_id;
      for (const f of cp.files) {
        const { committed, ranges, seen, ...meta } = f;
        const fp = progress.addFile(meta, committed);
        if (isSeenStat(seen)) this.seen.set(meta.key, seen);
        for (const [start, end, owner, done] of ranges) {
          fp.entries.push({ key: meta.key, start, end, owner, done, recorded: true });
        }
      }
      for (const i of cp.intents) this.intents.set(i.id, i);
      for (const q of cp.queued ?? []) this.queued.set(q.id, q);
    }
    let tornJournal = false;
    const corruptJournal: Recovery['corruptJournal'] = [];
    const startSeq = cp ? (usedPrev ? cp.prev_journal_seq || cp.journal_seq : cp.journal_seq) : 0;
    const seqs = (await listJournals(dir)).filter((s) => s >= startSeq);
    for (const s of seqs) {
      const file = journalPath(dir, s);
      const { records, tornTail, corrupt } = await readJournal(file);
      tornJournal ||= tornTail;
      for (const c of corrupt) corruptJournal.push({ file, ...c });
      for (const r of records) this.apply(r, doneIds);
    }
    const resumeAt = this.settle();
    await this.relocateFiles();
    this.recovery = {
      intents: [...this.intents.values()].sort((a, b) => a.id - b.id),
      resumeAt,
      usedPrevCheckpoint: usedPrev,
      checkpointProblem: problem,
      upgradedCheckpoint: legacy,
      tornJournal,
      corruptJournal,
    };
    this.prevSeq = cp?.journal_seq ?? 0;
    this.seq = Math.max(0, ...seqs, cp?.journal_seq ?? 0);
    this.journal = new JournalWriter(journalPath(dir, this.seq), this.opts.onBackgroundError);
    await this.journal.open();
    // Compact what recovery learned right away, so a crash loop replays little.
    await this.checkpoint();
  }

  /**
   * A file's recorded path can be stale: it was renamed while the agent was
   * down, or renamed out of the patterns while being read (kill -9 before the
   * new path was journaled). Recovery re-forms unacknowledged batches and
   * resumes reading by path, so without this it would read the *new* file
   * that took the old name (same offsets, other lines: those sent twice, ours
   * lost) or report the file gone. Find each file again by identity (device +
   * inode + fingerprint) in its directory.
   */
  private async relocateFiles(): Promise<void> {
    // Files not at their recorded path are looked up in one listing per directory, not one each.
    const listings = new Map<string, Promise<Map<string, string[]>>>();
    const inodesIn = (dir: string) => {
      let l = listings.get(dir);
      if (!l) listings.set(dir, (l = listInodes(dir)));
      return l;
    };
    await mapLimit([...this.progress.files.values()], RELOCATE_CONCURRENCY, async (fp) => {
      const found = (await unchangedSince(fp.meta, this.seen.get(fp.meta.key))) ?? (await findByIdentity(fp.meta, inodesIn));
      if (found === null) return;
      this.seen.set(fp.meta.key, [found.size, found.mtimeMs, found.ctimeMs]);
      if (found.path !== fp.meta.path) fp.meta = { ...fp.meta, path: found.path };
    });
  }

  private apply(r: JournalRecord, doneIds: Set<number>): void {
    const progress = this.progress;
    switch (r.t) {
      case 'f': {
        const { t: _t, ...meta } = r;
        const fp = progress.files.get(meta.key);
        if (fp) fp.meta = meta;
        else progress.addFile(meta, 0);
        return;
      }
      case 'q': {
        const { t: _t, ...q } = r;
        this.queued.set(q.id, q);
        return;
      }
      case 'qa':
        this.queued.delete(r.id);
        return;
      case 'i': {
        this.nextId = Math.max(this.nextId, r.id + 1);
        if (doneIds.has(r.id)) return;
        this.intents.set(r.id, { id: r.id, ds: r.ds, ranges: r.ranges, at: r.at, ...(r.resend ? { resend: true } : {}) });
        for (const rg of r.ranges) {
          progress.files.get(rg.file)?.entries.push({ key: rg.file, start: rg.start, end: rg.end, owner: r.id, done: false, recorded: true });
        }
        return;
      }
      case 'a': {
        doneIds.add(r.id);
        // Only the files the intent names (a scan of every file per ack made
        // replaying a long journal quadratic with 10,000 files).
        const intent = this.intents.get(r.id);
        this.intents.delete(r.id);
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
  private settle(): Map<string, number> {
    // A gap means bytes from there on were claimed but never recorded (a
    // crash between claiming a dead-letter range and recording it). Reading
    // resumes at the gap, so every unfinished batch recorded after it is
    // abandoned (read again as new data), in every file it touches.
    const abandoned = new Set<number>();
    let changed = true;
    while (changed) {
      changed = false;
      for (const fp of this.progress.files.values()) {
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
    for (const id of abandoned) this.intents.delete(id);
    const resumeAt = new Map<string, number>();
    for (const [key, fp] of this.progress.files) {
      let n = 0;
      while (n < fp.entries.length && fp.entries[n]!.done) n++;
      if (n > 0) {
        fp.committed = fp.entries[n - 1]!.end;
        fp.entries.splice(0, n);
      }
      resumeAt.set(key, fp.entries.length ? fp.entries[fp.entries.length - 1]!.end : fp.committed);
      this.progress.adoptEntries(fp.entries);
    }
    return resumeAt;
  }
}

/** Path of the file with `meta`'s identity: its recorded path, or another name in the same directory; null when gone. */
export async function locateByIdentity(meta: FileMeta): Promise<string | null> {
  return (await findByIdentity(meta))?.path ?? null;
}

function isSeenStat(v: unknown): v is SeenStat {
  return Array.isArray(v) && v.length === 3 && v.every((n) => typeof n === 'number');
}

/** The file at its recorded path, when its stat is exactly the one last checked. */
async function unchangedSince(meta: FileMeta, seen: SeenStat | undefined): Promise<VerifiedStat | null> {
  if (!seen) return null;
  const st = await fsp.stat(meta.path).catch(() => null);
  if (!st?.isFile() || st.dev !== meta.dev || st.ino !== meta.ino || !sameAsSeen(seen, st)) return null;
  return { path: meta.path, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
}

/** locateByIdentity, with what the check saw of the file. */
async function findByIdentity(meta: FileMeta, inodesIn: (dir: string) => Promise<Map<string, string[]>> = listInodes): Promise<VerifiedStat | null> {
  const matches = async (p: string): Promise<VerifiedStat | null> => {
    const fh = await fsp.open(p, 'r').catch(() => null);
    if (!fh) return null;
    try {
      const st = await fh.stat();
      const same = st.isFile() && st.dev === meta.dev && st.ino === meta.ino && (await sameContentStart(fh, st.size, meta));
      return same ? { path: p, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs } : null;
    } finally {
      await fh.close();
    }
  };
  const atPath = await matches(meta.path);
  if (atPath) return atPath;
  for (const p of (await inodesIn(path.dirname(meta.path))).get(`${meta.dev}:${meta.ino}`) ?? []) {
    const found = await matches(p);
    if (found) return found;
  }
  return null;
}

/**
 * The checkpoint of a state_dir, or its `.prev` when it is unreadable; null
 * when there is none (a fresh state_dir). Read-only (the status command uses
 * it next to a running agent). When a checkpoint exists but neither version
 * is readable it throws: never silently "start at end", since without it we
 * do not know what was delivered.
 */
export async function readCheckpoint(stateDir: string): Promise<{ cp: CheckpointFile | null; usedPrev: boolean; legacy: boolean; problem: string | null }> {
  const file = path.join(stateDir, CHECKPOINT_FILE);
  let sawAny = false;
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
    sawAny = true;
    const parsed = decodeCheckpoint<CheckpointFile>(text);
    if (parsed.ok) return { cp: parsed.value, usedPrev: isPrev, legacy: parsed.legacy, problem: problems[0] ?? null };
    problems.push(`${f}: ${parsed.why}`);
  }
  if (sawAny) throw new StateCorruptError(stateDir, problems);
  return { cp: null, usedPrev: false, legacy: false, problem: null };
}
