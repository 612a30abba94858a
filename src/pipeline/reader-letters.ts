// The lines the reader rejects (invalid JSON, too long) on their way to the
// dead-letter store: the record first, then the file's committed offset
// passes the line. A too-long line whose end is not written yet comes twice
// (batcher.ts tooLongSoFar): its record at once (`entry` null; the file's
// state then says so, FileMeta.lettered, so a restart inside the line does
// not write it again), then, at its end, its range (`input` null), which
// passes only once that record is on disk.
import type { DeadLetterInput, DeadLetterStore } from '../deadletter/store.js';
import type { Metrics } from '../metrics/metrics.js';
import type { StateWrites } from '../state/acker.js';
import type { RangeEntry } from '../state/progress.js';
import type { StateStore } from '../state/store.js';

export class ReaderLetters {
  /** Per file key: the record of a too-long line written before its end, until it is on disk (its range waits for it). */
  private readonly lettering = new Map<string, Promise<void>>();

  constructor(
    private readonly deadLetters: DeadLetterStore,
    private readonly store: StateStore,
    private readonly metrics: Metrics,
    private readonly writes: StateWrites,
  ) {}

  /** `onStored` once the record is on disk. */
  add(input: DeadLetterInput | null, key: string, entry: RangeEntry | null, onStored?: () => void): Promise<void> {
    const before = this.lettering.get(key);
    const task = (async () => {
      if (input) {
        const r = await this.writes.retryStateWrite(() => this.deadLetters.add({ ...input, fileKey: key }));
        if (r === 'stored') {
          this.metrics.linesDeadLettered.inc({ datasource: input.datasource, reason: input.reason });
          onStored?.();
        }
      } else await before;
      const { store } = this;
      const meta = store.metaOf(key);
      if (entry) await this.writes.retryStateWrite(async () => store.completeDeadLetterRange(key, entry));
      else if (input?.offset != null && meta) await this.writes.retryStateWrite(async () => store.updateFile({ ...meta, lettered: input.offset! }));
      // On disk now, not at the next group commit: a kill -9 before it writes the line's record once more at the restart.
      await this.writes.retryStateWrite(() => store.flush());
    })();
    if (!entry) {
      this.lettering.set(key, task);
      // Settled, nothing need wait for it: a line that never ends (its file forgotten) leaves nothing behind.
      const settled = () => {
        if (this.lettering.get(key) === task) this.lettering.delete(key);
      };
      task.then(settled, settled);
    } else if (!input) this.lettering.delete(key);
    return task;
  }

  /** Records of unfinished lines not yet on disk. */
  get pending(): number {
    return this.lettering.size;
  }
}
