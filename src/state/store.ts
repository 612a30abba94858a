// Durable progress: the journal (journal.ts) plus a compacted checkpoint.
// Longer than ~250 lines: the journal writes and the checkpoint share the
// in-memory state (what the checkpoint says of each file: snapshot.ts; the
// replay of what is on disk: replay.ts; finding files again by identity:
// spool/relocate.ts, injected as `relocate`).
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
import { atomicWrite } from '../util/fsx.js';
import type { BatchIds } from '../batcher/batcher.js';
import type { LongLived } from '../util/lifecycle.js';
import { JournalWriter, journalPath, listJournals, type FileMeta, type IntentRange, type QueuedIntent, type RangeRecord } from './journal.js';
import { encodeCheckpointChunks } from './checkpoint-format.js';
import { Progress, type FileProgress, type RangeEntry } from './progress.js';
import { CHECKPOINT_FILE, replayState, type IntentInfo, type SeenStat } from './replay.js';
import { checkpointFiles } from './snapshot.js';
import { affectedFiles, type Recovery } from './recovery.js';

export { CHECKPOINT_FILE, type CheckpointFile, type IntentInfo, type SeenStat } from './replay.js';
export type { AffectedFile, Recovery } from './recovery.js';

/** What an identity check saw of a file. */
export interface VerifiedStat {
  path: string;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

export function sameAsSeen(seen: SeenStat | undefined, st: { size: number; mtimeMs: number; ctimeMs: number }): boolean {
  return seen !== undefined && st.size === seen[0] && st.mtimeMs === seen[1] && st.ctimeMs === seen[2];
}

/**
 * Finds the files of the state again by identity at start-up: each one
 * found (at its recorded path or another name in its directory), by key.
 * spool/relocate.ts relocateFiles; injected, so the state does not import
 * the spool.
 */
export type FileRelocator = (files: ReadonlyArray<{ meta: FileMeta; seen: SeenStat | undefined }>) => Promise<Map<string, VerifiedStat>>;

/** Where the checkpoint reads each followed file's last identity-checked stat (the spooler). */
export interface SeenNow {
  seenOf(key: string): SeenStat | undefined;
  /** The first scan has ended: every file of the spool is in the state. */
  readonly scannedOnce: boolean;
}

export interface StateStoreOptions {
  stateDir: string;
  now: () => number;
  onBackgroundError: (err: unknown) => void;
  relocate: FileRelocator;
}

export class StateStore implements LongLived, BatchIds {
  /** Written only through this store's methods and the batcher's claims (`claims`). */
  private readonly progress = new Progress();
  private readonly intents = new Map<number, IntentInfo>();
  private readonly queued = new Map<number, QueuedIntent>();
  private nextId = 1;
  private journal!: JournalWriter;
  private seq = 0;
  /** The journal seq the last checkpoint written names (its journals are replayed after it). */
  private checkpointSeq = 0;
  private lastCheckpointBytes = 0;
  recovery!: Recovery;
  /** Last identity-checked stat per file: from the spooler while running, else as loaded. */
  private readonly seen = new Map<string, SeenStat>();
  /** Files found at start at another path than the state recorded (renamedWhileDown: renamed while the agent was down). */
  private readonly movedWhileDown = new Set<string>();
  private seenNow: SeenNow | null = null;
  /** ReplayedState.unknownFilesFromStart, kept in each checkpoint until a scan has ended. */
  private unknownFromStart = false;
  /** No checkpoint and no journal record at load (ReplayedState.firstStart). */
  private first = true;

  private constructor(private readonly opts: StateStoreOptions) {}

  static async open(opts: StateStoreOptions): Promise<StateStore> {
    const store = new StateStore(opts);
    // A failed load (a full disk at start) leaves no journal behind: its timer's flush was a fatal ENOSPC, and each try kept a descriptor.
    await store.load().catch(async (err: unknown) => {
      await (store.journal as JournalWriter | undefined)?.destroy().catch(() => undefined);
      throw err;
    });
    return store;
  }

  newBatchId(): number {
    return this.nextId++;
  }

  trackFile(meta: FileMeta, committed: number): FileProgress {
    const fp = this.progress.addFile(meta, committed);
    // `from`: a replay of this record alone (a kill -9 before the next
    // checkpoint, or a state rebuilt from the journals) does not read the
    // bytes before it, which `start_at: end` skipped.
    this.journal.append({ t: 'f', ...meta, ...(committed > 0 ? { from: committed } : {}) });
    return fp;
  }

  renamedWhileDown(key: string): boolean {
    return this.movedWhileDown.has(key);
  }

  updateFile(meta: FileMeta): void {
    const fp = this.progress.files.get(meta.key);
    if (!fp) return;
    fp.meta = meta;
    this.journal.append({ t: 'f', ...meta });
  }

  /** Record a closed batch's ranges durably (before its first send). */
  async recordIntent(id: number, ds: string, lines?: number): Promise<IntentInfo> {
    const info: IntentInfo = { id, ds, ranges: this.progress.rangesOf(id), at: this.opts.now(), ...(lines !== undefined ? { lines } : {}) };
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

  /**
   * spoolship_behind_bytes' share of the disk retry queue, per Data Source: a
   * queued batch is done for the committed offset, not acknowledged. Only
   * the bytes below their file's committed offset (past it, the file's own
   * count has them); all of them once the state forgot the file.
   */
  queuedBytesBehind(): Map<string, number> {
    const out = new Map<string, number>();
    for (const q of this.queued.values()) {
      let n = 0;
      for (const r of q.ranges) {
        const committed = this.progress.files.get(r.file)?.committed ?? Infinity;
        n += Math.max(0, Math.min(r.end, committed) - r.start);
      }
      if (n > 0) out.set(q.ds, (out.get(q.ds) ?? 0) + n);
    }
    return out;
  }

  /** Every Data Source the state knows: of its files, its batches in flight and in the disk retry queue. */
  dataSources(): Set<string> {
    const out = new Set<string>();
    for (const fp of this.progress.files.values()) out.add(fp.meta.ds);
    for (const i of this.intents.values()) out.add(i.ds);
    for (const q of this.queued.values()) out.add(q.ds);
    return out;
  }

  /** Lines of a damaged queue record, to be sent again from the spool: a new intent of their own (durable before the send). */
  async recordResend(ds: string, ranges: IntentRange[], lines: number): Promise<IntentInfo> {
    const info: IntentInfo = { id: this.nextId++, ds, ranges, at: this.opts.now(), lines, resend: true };
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

  /** Size of the last checkpoint written, or read at start (0: none): the acker compacts in proportion to it. */
  get checkpointBytes(): number {
    return this.lastCheckpointBytes;
  }

  /** Flush acks now (graceful stop, tests). */
  async flush(): Promise<void> {
    await this.journal.flush();
  }

  /**
   * Compact: start a new journal, write the checkpoint, drop journals no
   * checkpoint needs. A checkpoint that fails after the switch (the old
   * journal's last records meet a full disk) leaves the old journal behind
   * the new one, which writes nothing before the old one is closed; the
   * next attempt finishes that switch instead of starting another journal
   * (which leaked a descriptor per attempt and abandoned the old one's
   * buffered acknowledgements).
   */
  async checkpoint(): Promise<void> {
    if (!this.journal.switching) {
      const next = new JournalWriter(journalPath(this.opts.stateDir, this.seq + 1), this.opts.onBackgroundError, this.journal);
      await next.open();
      // From here on records go to the new journal; the snapshot below
      // covers everything appended to the old one.
      this.journal = next;
      this.seq += 1;
    }
    const chunks = this.snapshot(this.seq, this.checkpointSeq);
    await this.journal.closePredecessor();
    await atomicWrite(path.join(this.opts.stateDir, CHECKPOINT_FILE), chunks);
    this.lastCheckpointBytes = chunks.reduce((n, c) => n + Buffer.byteLength(c), 0);
    // checkpoint.json.prev names the journals from checkpointSeq on: keep those.
    const keepFrom = this.checkpointSeq;
    this.checkpointSeq = this.seq;
    for (const s of await listJournals(this.opts.stateDir)) {
      if (s < keepFrom) await fsp.rm(journalPath(this.opts.stateDir, s), { force: true });
    }
  }

  /** Where the batcher claims every byte it hands over (by a batch or a dead letter). */
  get claims(): Pick<Progress, 'claim'> {
    return this.progress;
  }

  /** How many files the state tracks. */
  get fileCount(): number {
    return this.progress.files.size;
  }

  /** The files the state tracks, read-only. */
  files(): IterableIterator<Readonly<FileProgress>> {
    return this.progress.files.values();
  }

  /** One tracked file's progress, read-only. */
  file(key: string): Readonly<FileProgress> | undefined {
    return this.progress.files.get(key);
  }

  metaOf(key: string): FileMeta | undefined {
    return this.progress.files.get(key)?.meta;
  }

  /** A tracked file's committed offset, or undefined. */
  committedOf(key: string): number | undefined {
    return this.progress.files.get(key)?.committed;
  }

  /**
   * A file's last identity-checked stat as start-up left it (checkpoint, then
   * relocateFiles). At its recorded path with exactly this stat it is that
   * file: the first scan need not read its first bytes again.
   */
  seenAtStart(key: string): SeenStat | undefined {
    return this.seen.get(key);
  }

  /**
   * The state was rebuilt from the journals and no first scan has ended
   * since: a file the state does not know may be one the lost checkpoint
   * knew, so it is read from its start, whatever `start_at` says.
   */
  get unknownFilesFromStart(): boolean {
    return this.unknownFromStart;
  }

  /**
   * No checkpoint and no journal record were found: the first start on this
   * state_dir. At any other, a file the state does not know was created while
   * the agent was down: read from its start whatever `start_at` says.
   */
  get firstStart(): boolean {
    return this.first;
  }

  /** Ids above these are given to new batches (the disk queue's, which the state may have lost with a checkpoint). */
  reserveIds(ids: Iterable<number>): void {
    for (const id of ids) this.nextId = Math.max(this.nextId, id + 1);
  }

  /** Where checkpoints take each file's current identity-checked stat (the spooler's tailers). */
  setSeenProvider(files: SeenNow): void {
    this.seenNow = files;
  }

  /** The journal's buffered records are written and the file closed (a checkpoint is the caller's: the acker's, the stop's). */
  async close(): Promise<void> {
    await this.journal.close();
  }

  /** The journal file is closed without writing what is buffered: the next start recovers from what is on disk. */
  async destroy(): Promise<void> {
    await this.journal.destroy();
  }

  /** The checkpoint's text in chunks (checkpoint-format.ts), taken now: nothing can change it while it is built. */
  private snapshot(journalSeq: number, prevSeq: number): string[] {
    const live = new Set<number>();
    if (this.seenNow?.scannedOnce) this.unknownFromStart = false;
    const files = checkpointFiles(this.progress, (id) => this.intents.has(id), (key) => this.seenNow?.seenOf(key) ?? this.seen.get(key), live);
    const head = { journal_seq: journalSeq, prev_journal_seq: prevSeq, next_id: this.nextId, ...(this.unknownFromStart ? { unknown_files_from_start: true } : {}) };
    return encodeCheckpointChunks(head, files, () => ({
      intents: [...this.intents.values()].filter((i) => live.has(i.id) || i.resend),
      queued: [...this.queued.values()],
    }));
  }

  private async load(): Promise<void> {
    const dir = this.opts.stateDir;
    await fsp.mkdir(dir, { recursive: true });
    const replayed = await replayState(dir, this.progress, { repair: true });
    this.lastCheckpointBytes = (await fsp.stat(path.join(dir, CHECKPOINT_FILE)).catch(() => null))?.size ?? 0;
    this.nextId = replayed.nextId;
    for (const [id, i] of replayed.intents) this.intents.set(id, i);
    for (const [id, q] of replayed.queued) this.queued.set(id, q);
    for (const [key, seen] of replayed.seen) this.seen.set(key, seen);
    this.unknownFromStart = replayed.unknownFilesFromStart;
    this.first = replayed.firstStart;
    await this.relocateFiles();
    this.recovery = {
      intents: [...this.intents.values()].sort((a, b) => a.id - b.id),
      resumeAt: replayed.resumeAt,
      usedPrevCheckpoint: replayed.usedPrevCheckpoint,
      rebuiltFromJournals: replayed.rebuiltFromJournals,
      checkpointProblem: replayed.checkpointProblem,
      upgradedCheckpoint: replayed.upgradedCheckpoint,
      tornJournal: replayed.tornJournal,
      corruptJournal: replayed.corruptJournal,
      affectedFiles: replayed.corruptJournal.length > 0 || replayed.rebuiltFromJournals ? affectedFiles(this.progress, this.intents.values(), replayed.resumeAt) : [],
    };
    this.checkpointSeq = replayed.checkpointSeq;
    this.seq = Math.max(0, ...replayed.journalSeqs, replayed.checkpointSeq);
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
    const files = [...this.progress.files.values()];
    const found = await this.opts.relocate(files.map((fp) => ({ meta: fp.meta, seen: this.seen.get(fp.meta.key) })));
    for (const fp of files) {
      const f = found.get(fp.meta.key);
      if (!f) continue;
      this.seen.set(fp.meta.key, [f.size, f.mtimeMs, f.ctimeMs]);
      if (f.path === fp.meta.path) continue;
      fp.meta = { ...fp.meta, path: f.path };
      this.movedWhileDown.add(fp.meta.key);
    }
  }
}
