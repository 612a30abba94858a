// Storing the rows of an accepted request, with the fault that shapes the
// insert (partial, reset_after_insert, goaway) and the platform's 5-hour
// deduplication of retried partial inserts (partial-dedup.ts).
import type { StatsCollector } from '../stats.js';
import type { FaultKind } from '../types.js';
import { jsonError, type EventsOutcome } from './outcome.js';
import { PartialInsertMemory } from './partial-dedup.js';
import { dataSourceFileName } from './file-names.js';
import type { RowStore } from './row-store.js';
import { bytesOfRange, countRange, type RowSet } from './rows.js';

export interface Inserter {
  store: RowStore;
  dedup: PartialInsertMemory;
  stats: StatsCollector;
}

export interface InsertRequest {
  name: string;
  /** Decoded body: the dedup key is its hash. */
  body: Buffer;
  rows: RowSet;
  action: FaultKind | null;
  wait: boolean;
}

export async function insertRows(ins: Inserter, req: InsertRequest): Promise<EventsOutcome> {
  const total = req.rows.starts.length;
  const partial = req.action?.kind === 'partial' ? req.action : null;
  // Hash only when a remembered partial insert could match, or one is about to be remembered.
  const key = partial !== null || !ins.dedup.empty ? PartialInsertMemory.key(req.name, req.body) : null;
  const already = key === null ? 0 : ins.dedup.storedLines(key);
  const upTo = partial !== null ? Math.max(already, Math.floor(total / 2)) : total;
  try {
    await storeRange(ins, req.name, req.rows, already, upTo);
  } catch (err) {
    return jsonError(500, `insert failed: ${(err as Error).message}`);
  }
  if (partial !== null) {
    ins.dedup.rememberPartial(key!, upTo);
    const message =
      partial.status === 422
        ? `ingestion partially completed: error in a Materialized View (${upTo} of ${total} rows stored)`
        : `unexpected error: ingestion partially completed (${upTo} of ${total} rows stored)`;
    return jsonError(partial.status, message);
  }
  if (key !== null) ins.dedup.forget(key);
  if (req.action?.kind === 'reset_after_insert') return { kind: 'reset' };
  if (req.action?.kind === 'goaway') return { kind: 'goaway' };
  // The answer covers the whole body, including rows a failed attempt stored.
  const counts = countRange(req.rows, 0, total);
  return {
    kind: 'respond',
    response: { status: req.wait ? 200 : 202, body: { successful_rows: counts.rows, quarantined_rows: counts.quarantined } },
  };
}

async function storeRange(ins: Inserter, name: string, rows: RowSet, from: number, to: number): Promise<void> {
  if (to <= from) return;
  const counts = countRange(rows, from, to);
  if (ins.store.persists) {
    const bytes = bytesOfRange(rows, from, to);
    await Promise.all([
      ins.store.append(dataSourceFileName(name, 'rows'), bytes.rows),
      ins.store.append(dataSourceFileName(name, 'quarantine'), bytes.quarantined),
    ]);
  }
  ins.stats.addRows(name, counts.rows, counts.quarantined);
}
