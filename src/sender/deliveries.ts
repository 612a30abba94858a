// The batches the sender is delivering now, and what it knows of each
// batch's attempts (`spoolship queue list`), kept across a deferral to the
// disk queue until the batch is done or forgotten. `spoolship queue
// dead-letter` releases a batch through here.
//
// A context lives while its delivery runs; a history until its batch's
// delivery ends 'done', or its owner forgets it (forget).
import { setMaxListeners } from 'node:events';
import type { Clock } from '../util/clock.js';
import type { Notifier } from './notifier.js';
import type { BatchHistory, DeliverOptions, DeliveryCtx, HeldBatch, RootBatch } from './types.js';

export class Deliveries {
  /** Deliveries under way, by batch id. */
  private readonly active = new Map<number, DeliveryCtx>();
  /** Attempts per batch id, kept across a deferral to the disk queue until the batch is done. */
  private readonly histories = new Map<number, BatchHistory>();

  constructor(
    private readonly clock: Clock,
    private readonly notifier: Notifier,
  ) {}

  start(ctx: DeliveryCtx): void {
    this.active.set(ctx.root.id, ctx);
  }

  end(ctx: DeliveryCtx): void {
    this.active.delete(ctx.root.id);
  }

  get size(): number {
    return this.active.size;
  }

  all(): IterableIterator<DeliveryCtx> {
    return this.active.values();
  }

  /** Is a batch of `ds` being delivered now? */
  hasDataSource(ds: string): boolean {
    return [...this.active.values()].some((c) => c.root.ds === ds);
  }

  /** The batches being delivered now, oldest first. */
  held(parked: (ds: string) => boolean): HeldBatch[] {
    return [...this.active.values()].map((ctx) => ({
      root: ctx.root,
      parked: parked(ctx.root.ds),
      since: ctx.since,
      history: this.historyOf(ctx.root.id),
    }));
  }

  /** Attempts and last answer of a batch (also of one waiting in the disk queue since). */
  history(id: number): BatchHistory | null {
    return this.histories.get(id) ?? null;
  }

  /**
   * The batch is gone for good without a delivery of its own ending 'done'
   * (cut into queued pieces, moved by an operator, its queue record
   * damaged): its history goes too. Each such id stayed in the map for the
   * life of the process.
   */
  forget(id: number): void {
    this.histories.delete(id);
  }

  /**
   * `spoolship queue dead-letter`: the batch being delivered stops waiting;
   * what of it is not yet acknowledged goes to the dead-letter store (reason
   * `operator`), and its delivery ends 'done'. A request on the wire is
   * answered first (its lines may be acknowledged after all). Resolves with
   * the lines moved, or null when the batch is not being delivered; 'aborted'
   * when the sender stopped first (nothing more moved).
   */
  release(id: number): { wait: () => Promise<number | 'aborted'> } | null {
    const ctx = this.active.get(id);
    if (!ctx) return null;
    ctx.released = true;
    ctx.ac.abort();
    this.notifier.notify();
    return {
      wait: async () => {
        while (ctx.result === null) await this.notifier.wait(this.clock, 60_000);
        return ctx.result === 'done' ? ctx.releasedLines : 'aborted';
      },
    };
  }

  historyOf(id: number): BatchHistory {
    let h = this.histories.get(id);
    if (!h) {
      h = { attempts: 0, lastStatus: null, lastError: null };
      this.histories.set(id, h);
    }
    return h;
  }
}

export function newCtx(root: RootBatch, opts: DeliverOptions, since: number): DeliveryCtx {
  const ac = new AbortController();
  setMaxListeners(0, ac.signal);
  return { root, opts, bisecting: false, probes: 0, linesAcked: 0, linesDeadLettered: 0, accepted: false, rejectedQuarters: new Set(), pendingRejects: [], holdsDsProbe: false, unknownOutcome: false, ac, released: false, releasedLines: 0, result: null, since };
}
