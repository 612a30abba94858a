// What the checkpoint says of each file (store.ts checkpoint()): its
// committed offset and the recorded ranges after it, taken from the
// in-memory progress at one moment, made as it is written.
import { DEAD_LETTER_OWNER, type Progress } from './progress.js';
import type { CheckpointFile, SeenStat } from './replay.js';

/**
 * Each file's entry of the checkpoint; `live` collects the batches still
 * under way. `hasIntent`: whether a batch's intent was recorded (in the
 * journal, or still being group-committed to it); `seenOf`: the file's last
 * identity-checked stat.
 */
export function* checkpointFiles(
  progress: Progress,
  hasIntent: (id: number) => boolean,
  seenOf: (key: string) => SeenStat | undefined,
  live: Set<number>,
): Generator<CheckpointFile['files'][number]> {
  for (const fp of progress.files.values()) {
    const ranges: Array<[number, number, number, boolean]> = [];
    let pos = fp.committed;
    for (const e of fp.entries) {
      // An intent still being group-committed to the old journal counts as
      // recorded: checkpoint() closes (flushes) the old journal before the
      // snapshot is written. Cutting the snapshot there instead dropped the
      // intent (its journal is not replayed after this checkpoint), so the
      // next recovery found a gap and re-sent everything acked after it.
      const recorded = e.recorded || (e.owner !== DEAD_LETTER_OWNER && hasIntent(e.owner));
      if (e.start !== pos) break;
      if (!recorded && e.owner === DEAD_LETTER_OWNER) {
        // A dead letter still being written: left out as a hole, and the
        // ranges after it kept. Its `d` record goes to the new journal,
        // which fills the hole at the next start; cutting the file here
        // dropped the intents and acks after it (their journal is not
        // replayed after this checkpoint), so a kill -9 sent acknowledged
        // batches again and re-batched those in flight. Without the `d`
        // record (a crash before the dead letter was stored) the hole is a
        // gap: reading resumes there (state/replay.ts).
        pos = e.end;
        continue;
      }
      if (!recorded) break;
      ranges.push([e.start, e.end, e.owner, e.done]);
      if (!e.done && e.owner !== DEAD_LETTER_OWNER) live.add(e.owner);
      pos = e.end;
    }
    const seen = seenOf(fp.meta.key);
    yield { ...fp.meta, committed: fp.committed, ranges, ...(seen ? { seen } : {}) };
  }
}
