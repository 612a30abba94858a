// Codec and level sweep: the reference and spoolship at each codec:level point.
import { rmSync } from 'node:fs';
import { ctx } from '../lib/context.mjs';
import { backlogCorpus } from '../lib/corpus.mjs';
import { f1, loadavg, table } from '../lib/format.mjs';
import { runReference, runSpoolship, THROUGHPUT_COLS } from '../lib/runs.mjs';

export async function sweep() {
  const { opt, sections, log } = ctx;
  const corpus = backlogCorpus(opt.corpusDir, { bytes: opt.sweepSize });
  log(`sweep corpus ${corpus.bytes} bytes${corpus.cached ? ' (cached)' : ''}; loadavg ${loadavg()}`);
  const rows = [];
  for (const p of opt.sweep) {
    const ref = await runReference(corpus, p.codec, p.level);
    const sp = await runSpoolship(corpus, p.codec, p.level);
    sp.ratio = ref.wallMs / sp.wallMs;
    sp.steadyRatio = sp.steadyMBs && ref.steadyMBs ? sp.steadyMBs / ref.steadyMBs : null;
    rows.push(ref, sp);
    log(`sweep ${p.codec}:${p.level}: reference ${f1(ref.bytes / 1e6 / (ref.wallMs / 1000))} MB/s, spoolship ${f1(sp.bytes / 1e6 / (sp.wallMs / 1000))} MB/s`);
    if (!opt.keep) rmSync(sp.dir, { recursive: true, force: true });
  }
  sections.push(
    `### Codec and level sweep (${(corpus.bytes / 1e6).toFixed(0)} MB corpus)\n\n` +
      table(THROUGHPUT_COLS, rows) +
      `\nThe reference applies the zstd level itself; spoolship's zstd requests are the same size at every level (wire KB): @mongodb-js/zstd 1.2.2 drops the level (bench/README.md, finding 1).\n`,
  );
}
