// State shared by bench/run.mjs and the cases: flags, paths, the sink of
// the run, and the sections and target rows of the results file.
export const MAX_BYTES = 10_000_000; // batch.max_bytes of every agent run (and the emulator's --max-body)
export const LINGER_MS = 1000; // batch.linger_ms of every agent run

export const ctx = {
  /** Repository root (no trailing slash). */
  root: '',
  /** Parsed flags (bench/run.mjs). */
  opt: null,
  /** Temp dir of this run. */
  work: '',
  sinkLog: '',
  /** The count-only emulator every case ships to (restarted if it dies). */
  sink: null,
  /** Markdown sections of the results file. */
  sections: [],
  /** [target, measured] rows of the summary table. */
  summary: [],
  log: (...a) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}]`, ...a),
};
