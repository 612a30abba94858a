// Read-only view of a state_dir's progress, for `spoolship status` while the
// agent is down (or has no admin endpoint). It replays the same files as
// StateStore recovery (src/state/store.ts) but never writes: StateStore.open
// compacts into a new checkpoint and cuts torn journal tails, which a status
// command must not do, least of all under a running agent.
//
// Safe under a running agent: the checkpoint is replaced by rename (we read
// one version or the other), the live journal may end in a half-written
// record (ignored, not cut), and a journal deleted between listing and
// reading (two checkpoints went by) restarts the read.
import { promises as fsp } from 'node:fs';
import { journalPath, listJournals, readJournal, type FileMeta, type JournalRecord } from '../state/journal.js';
import { readCheckpoint } from '../state/store.js';

const READ_ATTEMPTS = 3;

interface Range {
  start: number;
  end: number;
  /** Batch id, or null for a dead-lettered range. */
  owner: number | null;
  done: boolean;
}

export interface FileProgressView {
  meta: FileMeta;
  committed: number;
  /** End of the contiguous recorded ranges: where reading resumes at the next start. */
  read: number;
}

export interface StateView {
  files: FileProgressView[];
  /** Recorded batches not done: re-formed and resent at the next start. */
  pendingBatches: number;
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
  const { cp, usedPrev } = await readCheckpoint(stateDir);
  const files = new Map<string, { meta: FileMeta; committed: number; ranges: Range[] }>();
  const doneIds = new Set<number>();
  for (const f of cp?.files ?? []) {
    const { committed, ranges, ...meta } = f;
    files.set(meta.key, { meta, committed, ranges: ranges.map(([start, end, owner, done]) => ({ start, end, owner: owner < 0 ? null : owner, done })) });
  }
  const startSeq = cp ? (usedPrev ? cp.prev_journal_seq || cp.journal_seq : cp.journal_seq) : 0;
  for (const seq of (await listJournals(stateDir)).filter((s) => s >= startSeq)) {
    // The agent's own reader (torn tails and damaged records alike), without repairing anything.
    const { records } = await readJournal(journalPath(stateDir, seq), false);
    for (const r of records) apply(r, files, doneIds);
  }
  const out: FileProgressView[] = [];
  const pending = new Set<number>();
  for (const f of files.values()) {
    f.ranges.sort((a, b) => a.start - b.start);
    let committed = f.committed;
    let read = f.committed;
    let settled = true;
    for (const r of f.ranges) {
      if (r.end <= read) continue;
      // A gap: bytes claimed but never recorded. Recovery resumes there.
      if (r.start !== read) break;
      read = r.end;
      if (settled && r.done) committed = r.end;
      else {
        settled = false;
        if (!r.done && r.owner !== null) pending.add(r.owner);
      }
    }
    out.push({ meta: f.meta, committed, read });
  }
  return {
    files: out,
    pendingBatches: pending.size,
    usedPrevCheckpoint: usedPrev,
  };
}

function apply(r: JournalRecord, files: Map<string, { meta: FileMeta; committed: number; ranges: Range[] }>, doneIds: Set<number>): void {
  switch (r.t) {
    case 'f': {
      const { t: _t, ...meta } = r;
      const f = files.get(meta.key);
      if (f) f.meta = meta;
      else files.set(meta.key, { meta, committed: 0, ranges: [] });
      return;
    }
    case 'i':
      if (doneIds.has(r.id)) return;
      for (const rg of r.ranges) files.get(rg.file)?.ranges.push({ start: rg.start, end: rg.end, owner: r.id, done: false });
      return;
    case 'a':
      doneIds.add(r.id);
      for (const f of files.values()) for (const rg of f.ranges) if (rg.owner === r.id) rg.done = true;
      return;
    case 'd':
      for (const rg of r.ranges) files.get(rg.file)?.ranges.push({ start: rg.start, end: rg.end, owner: null, done: true });
      return;
    case 'x':
      files.delete(r.key);
      return;
  }
}

