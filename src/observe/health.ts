// What /readyz answers and how the retry queue is reported: one reason per
// cause that keeps lines from being acknowledged (a park of the budget or of
// a Data Source, a state fault, a backlog with no acknowledgement for
// STALL_LINGER_PERIODS linger periods), and the queue gauges with one log
// event per queue state change.
import type { Readiness } from '../admin/server.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import type { RetryQueue } from '../queue/retry-queue.js';
import type { Clock } from '../util/clock.js';

/** /readyz: a backlog with no acknowledgement for this many linger periods is not ready. */
export const STALL_LINGER_PERIODS = 10;

export interface HealthSources {
  sender: { readonly budgetPark: { readonly reason: string | null }; parkedDataSources(): ReadonlyMap<string, string> };
  acker: { readonly faults: readonly string[] };
  pipeline: { batchesActiveExcept(ds: ReadonlySet<string>): number; readonly lastAckAt: number };
  queue: Pick<RetryQueue, 'batches' | 'bytes' | 'hasRoom' | 'batchesExcept'>;
}

export function readiness(src: HealthSources, clock: Clock, lingerMs: number): Readiness {
  const reasons: string[] = [];
  if (src.sender.budgetPark.reason) reasons.push(src.sender.budgetPark.reason);
  // Each Data Source park reason once (bad_request, datasource_rejected).
  const parked = src.sender.parkedDataSources();
  for (const r of new Set(parked.values())) reasons.push(r);
  reasons.push(...src.acker.faults);
  // Backlog: batches being sent, or waiting in the disk queue (an outage
  // moves them there); a parked Data Source's batches, queued or in memory,
  // are its park. A parked budget holds every batch: that is its reason,
  // not no_progress.
  const others = new Set(parked.keys());
  const backlog = src.pipeline.batchesActiveExcept(others) > 0 || src.queue.batchesExcept(others) > 0;
  if (!src.sender.budgetPark.reason && backlog && clock.now() - src.pipeline.lastAckAt > STALL_LINGER_PERIODS * lingerMs) reasons.push('no_progress');
  return { ready: reasons.length === 0, reasons };
}

/** The retry queue's gauges, and one log event per state change (batches start waiting on disk, it fills, it drains). */
export class QueueReport {
  private state: 'empty' | 'holding' | 'full' = 'empty';
  /** queue_full was said since the queue last drained: at the edge of a volume's reserve the room comes and goes with every page, and said again each time it was a WARN every few seconds. */
  private fullSaid = false;

  constructor(
    private readonly queue: Pick<RetryQueue, 'batches' | 'bytes' | 'diskBytes' | 'hasRoom' | 'limit'>,
    private readonly o: { metrics: Metrics; log: Logger; maxBatchBytes: number; maxQueueBytes: number },
  ) {}

  update(): void {
    const q = this.queue;
    const { metrics, log } = this.o;
    // What the queue holds on disk, as an operator finds it on a full disk.
    metrics.queueBytes.set(q.diskBytes);
    metrics.queueBatches.set(q.batches);
    const state = q.batches === 0 ? 'empty' : q.hasRoom(this.o.maxBatchBytes) ? 'holding' : 'full';
    if (state === this.state) return;
    const at = { batches: q.batches, bytes: q.bytes, max_bytes: this.o.maxQueueBytes };
    if (state === 'full' && !this.fullSaid) {
      this.fullSaid = true;
      const { by, room_bytes, reserve_bytes } = q.limit;
      // Full is judged for a batch of batch.max_bytes: a volume with 3.9 MB left said "no more room" with 652 bytes queued.
      if (by === 'disk') {
        log.warn(
          { event: 'queue_full', ...at, limited_by: by, room_bytes, reserve_bytes, batch_max_bytes: this.o.maxBatchBytes },
          "retry queue full: state_dir's volume has room_bytes left beside the reserve_bytes it keeps for acknowledgements, and room_bytes is less than a batch of batch.max_bytes; a batch that does not fit waits in memory and reading pauses until the queue drains",
        );
      } else {
        log.warn({ event: 'queue_full', ...at, limited_by: by }, 'retry queue full: reading pauses until it drains (the spool files hold the rest)');
      }
    }
    else if (state === 'holding' && this.state === 'empty') log.warn({ event: 'queue_holding', ...at }, 'batches are waiting in the disk retry queue');
    else if (state === 'empty') {
      this.fullSaid = false;
      log.info({ event: 'queue_drained' }, 'retry queue drained');
    }
    this.state = state;
  }

  /** At start: one WARN when state_dir's volume cannot hold queue.max_bytes (the queue stops short of it, disk-room.ts). */
  reportRoom(stateDir: string): void {
    const { by, room_bytes, reserve_bytes } = this.queue.limit;
    if (by !== 'disk') return;
    this.o.log.warn(
      { event: 'queue_larger_than_disk', state_dir: stateDir, max_bytes: this.o.maxQueueBytes, room_bytes: this.queue.diskBytes + room_bytes, reserve_bytes },
      "queue.max_bytes is more than state_dir's volume has free: the disk retry queue stops at room_bytes, leaving reserve_bytes free, and reading pauses there during an outage",
    );
  }
}
