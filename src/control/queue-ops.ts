// `spoolship queue list|dead-letter` against the running agent (the control
// channel, protocol.ts): the batches queued on disk or held by a park, and
// an operator's way out for a batch the platform will never accept. (The
// channel's two other requests are answered here too: the status report, and
// a recount of the dead-letter store.)
//
// A batch is in one of three places: a disk queue record nobody sends now
// (moved here directly: leased from the replayer, its lines dead-lettered,
// then acknowledged in the state and the queue, as the replayer does after a
// delivery), or a delivery under way in the sender (a queued batch the
// replayer sends, or a fresh one held by a park): the sender releases it and
// its owner completes it as for any other delivered batch.
import { decodeBody } from '../codec/index.js';
import { bodyBytes } from '../sender/body.js';
import type { DeadLetterInput, DeadLetterStore } from '../deadletter/store.js';
import type { LinePieces } from '../deadletter/from-batch.js';
import type { Logger } from '../log.js';
import type { QueuedHeader, QueueRef, RetryQueue } from '../queue/retry-queue.js';
import type { HeldBatch, RootBatch, Sender } from '../sender/sender.js';
import type { StateStore } from '../state/store.js';
import type { Clock } from '../util/clock.js';
import type { ControlAnswer, ControlRequest, MoveSummary, QueueRow } from './protocol.js';
import type { ControlHandler } from './server.js';
import type { StateWrites } from '../state/acker.js';

/** How long a move waits for a queued batch the replayer is picking up to show as a delivery. */
const PICKUP_WAIT_MS = 5000;
const PICKUP_POLL_MS = 50;

/** The agent's dead-letter path for a batch's lines: file and offset located, metrics counted (Pipeline implements it). */
export interface DeadLetterPath {
  deadLetterLines(batchId: number, ds: string, pieces: LinePieces, reason: 'operator', status: number | null): Promise<unknown>;
}

export interface QueueOpsDeps {
  queue: RetryQueue;
  sender: Sender;
  store: StateStore;
  deadLetters: DeadLetterStore;
  clock: Clock;
  log: Logger;
  /** Where a moved batch's lines are dead-lettered. */
  deadLetterPath: DeadLetterPath;
  /** Runs each state write, waiting out a full state_dir (state/acker.ts). */
  writes: StateWrites;
  /** The queue changed (its metrics). */
  onQueueChange: () => void;
  /** The path of a file key of the state. */
  pathOf: (key: string) => string | undefined;
  /** dead_letter.max_bytes (logged when a replay or purge changed the store). */
  deadLetterMaxBytes: number;
  /** The agent's /status report (`spoolship status` asks here when the admin endpoint cannot be asked). */
  status: () => Promise<unknown>;
}

interface Found {
  row: QueueRow;
  /** Set for a disk queue record. */
  queued: { ref: QueueRef; header: QueuedHeader } | null;
  /** Set for a delivery under way. */
  held: HeldBatch | null;
}

export class QueueOps implements ControlHandler {
  /** One operator request at a time: two moves of the same batch must not race. */
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly d: QueueOpsDeps) {}

  handle(req: ControlRequest): Promise<ControlAnswer> {
    if (req.op === 'dead_letters_changed') return this.recountDeadLetters();
    if (req.op === 'status') return this.d.status().then((report) => ({ ok: true, report }));
    const run = this.chain.then(() => (req.op === 'queue_list' ? this.list(req.datasource) : this.move(req.ids, req.datasource)));
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** A dead-letter replay or purge changed the store (another process): count it again, so the bound holds. */
  private async recountDeadLetters(): Promise<ControlAnswer> {
    const bytes = await this.d.deadLetters.recount();
    this.d.log.info({ event: 'dead_letters_recounted', bytes, max_bytes: this.d.deadLetterMaxBytes }, 'a dead-letter replay or purge changed the store; counted it again');
    return { ok: true, dead_letter_bytes: bytes };
  }

  private async list(datasource?: string): Promise<ControlAnswer> {
    return { ok: true, rows: (await this.find(datasource)).map((f) => f.row) };
  }

  /** Every batch queued on disk or held by a park, oldest first. */
  private async find(datasource?: string): Promise<Found[]> {
    const { queue, sender, clock } = this.d;
    const held = new Map(sender.held().map((h) => [h.root.id, h]));
    const budgetParked = sender.budgetPark.parked;
    const parkedDs = sender.parkedDataSources();
    const now = clock.now();
    const out: Found[] = [];
    for (const r of await queue.list()) {
      const h = r.header;
      const history = sender.history(h.id);
      out.push({
        row: {
          id: h.id,
          datasource: h.ds,
          state: budgetParked || parkedDs.has(h.ds) ? 'parked' : 'queued',
          lines: h.lines,
          bytes: h.rawLen,
          compressed_bytes: r.bodyBytes,
          age_ms: Math.max(0, now - h.queuedAt),
          // The agent's own count, else what the record kept when it was queued (an agent started since).
          attempts: (history ?? h.history)?.attempts ?? null,
          last_status: (history ?? h.history)?.lastStatus ?? null,
          last_error: (history ?? h.history)?.lastError ?? null,
        },
        queued: { ref: r.ref, header: h },
        held: held.get(h.id) ?? null,
      });
      held.delete(h.id);
    }
    // Fresh batches (never queued) that wait for a park: the queue had no room, or they were being sent when it parked.
    for (const h of held.values()) {
      if (!h.parked) continue;
      out.push({
        row: {
          id: h.root.id,
          datasource: h.root.ds,
          state: 'parked',
          lines: h.root.lines,
          bytes: h.root.rawLen,
          compressed_bytes: h.root.body.length,
          age_ms: Math.max(0, now - h.since),
          attempts: h.history.attempts,
          last_status: h.history.lastStatus,
          last_error: h.history.lastError,
        },
        queued: null,
        held: h,
      });
    }
    return out.filter((f) => datasource === undefined || f.row.datasource === datasource).sort((a, b) => a.row.id - b.row.id);
  }

  private async move(ids: number[], datasource?: string): Promise<ControlAnswer> {
    const found = await this.find(datasource);
    const byId = new Map(found.map((f) => [f.row.id, f]));
    const unknown = ids.filter((id) => !byId.has(id));
    if (unknown.length > 0) {
      return { ok: false, code: 1, error: `no queued or parked batch ${unknown.join(', ')}${datasource ? ` of ${datasource}` : ''} (see 'spoolship queue list'); nothing moved` };
    }
    const selected = ids.length > 0 ? [...new Set(ids)].map((id) => byId.get(id)!) : found;
    // Everything is sized first: a selection that does not fit moves nothing.
    let need = 0;
    for (const f of selected) need += await this.sizeOf(f);
    if (need > this.d.deadLetters.room) {
      return { ok: false, code: 1, error: `the batches need ${need} bytes and the dead-letter store has ${this.d.deadLetters.room} left (dead_letter.max_bytes); nothing moved` };
    }
    const summary: MoveSummary = { moved_batches: 0, moved_lines: 0, batches: [] };
    for (const f of selected) {
      const lines = await this.moveOne(f);
      if (lines === 'aborted') return { ok: false, code: 1, error: `the agent is stopping; moved ${summary.moved_batches} batch(es) before it did` };
      summary.moved_batches++;
      summary.moved_lines += lines;
      summary.batches.push({ id: f.row.id, datasource: f.row.datasource, lines });
      // The Data Source's park is released (its next batch, if any, probes now): shipping goes on at once when the moved batch was the problem.
      this.d.sender.operatorMoved(f.row.datasource);
      this.d.log.warn(
        { event: 'batch_dead_lettered', batch: f.row.id, datasource: f.row.datasource, lines, reason: 'operator' },
        'an operator moved a batch to the dead-letter store (spoolship queue dead-letter); shipping goes on',
      );
    }
    return { ok: true, ...summary };
  }

  /** Lines moved (0 when the batch was acknowledged meanwhile), or 'aborted' when the agent stops. */
  private async moveOne(f: Found): Promise<number | 'aborted'> {
    const { queue, sender, clock, store } = this.d;
    const deadline = clock.now() + PICKUP_WAIT_MS;
    let queued = f.queued;
    for (;;) {
      if (queued && queue.lease(queued.ref)) return this.moveQueued(queued.ref, queued.header);
      const release = sender.release(f.row.id);
      if (release) return release.wait();
      // Neither leased nor being delivered: a queued record the replayer has
      // taken and not yet handed to the sender, or a held batch on its way
      // into the disk queue (its probe failed again and it was deferred; its
      // journal intent stays until the record is written), or a batch
      // delivered meanwhile (nothing to move). Look again shortly.
      const rec = (await queue.list()).find((r) => r.header.id === f.row.id);
      if (rec) queued = { ref: rec.ref, header: rec.header };
      else if (store.intentRanges(f.row.id) === undefined) return 0;
      if (clock.now() >= deadline) throw new Error(`batch ${f.row.id} is being read by the agent and did not become movable within ${PICKUP_WAIT_MS / 1000} s; try again`);
      await clock.sleep(PICKUP_POLL_MS);
    }
  }

  private async moveQueued(ref: QueueRef, header: QueuedHeader): Promise<number> {
    const { queue, store } = this.d;
    const rec = await queue.readRecord(ref);
    if (!rec) {
      queue.release(ref);
      throw new Error(`queued batch ${header.id} cannot be read (damaged): the agent reads its lines again from the spool`);
    }
    const raw = rec.header.encoding ? await decodeBody(rec.header.encoding, rec.body) : rec.body;
    await this.d.deadLetterPath.deadLetterLines(header.id, header.ds, [{ lineStart: 0, raw }], 'operator', (this.d.sender.history(header.id) ?? header.history)?.lastStatus ?? null);
    // As after a delivery (replayer.ts): the state forgets the batch, then the queue.
    store.completeQueued(header.id);
    this.d.sender.forget(header.id);
    await this.d.writes.retryStateWrite(() => store.flush());
    await this.d.writes.retryStateWrite(() => queue.ack(ref));
    this.d.onQueueChange();
    return header.lines;
  }

  /** Dead-letter bytes the batch's lines take. */
  private async sizeOf(f: Found): Promise<number> {
    let body: RootBatch | null = f.held?.root ?? null;
    if (!body && f.queued) {
      const rec = await this.d.queue.readRecord(f.queued.ref);
      if (!rec) throw new Error(`queued batch ${f.row.id} cannot be read (damaged): the agent reads its lines again from the spool; nothing moved`);
      body = { id: f.row.id, ds: rec.header.ds, body: rec.body, encoding: rec.header.encoding, rawLen: rec.header.rawLen, lines: rec.header.lines };
    }
    if (!body) return 0;
    // A held body that was spilled is read from its file; delivered meanwhile, the file is gone and nothing is left to size.
    const bytes = await bodyBytes(body.body).catch(() => null);
    if (!bytes) return 0;
    const raw = body.encoding ? await decodeBody(body.encoding, bytes) : bytes;
    // Each record names its file and offset: room for the longest path of the batch's files.
    const paths = (this.d.store.batchRanges(body.id) ?? []).map((r) => this.d.pathOf(r.file) ?? '');
    const where = Math.max(0, ...paths.map((p) => JSON.stringify(p).length)) + 20;
    let n = 0;
    for (let pos = 0; pos < raw.length; ) {
      const nl = raw.indexOf(10, pos);
      const end = nl === -1 ? raw.length : nl;
      const input: DeadLetterInput = { datasource: body.ds, reason: 'operator', file: null, offset: null, bytes: end - pos, status: null, line: raw.subarray(pos, end) };
      n += this.d.deadLetters.sizeOf(input) + where;
      pos = end + 1;
    }
    return n;
  }
}
