// Real networks: every answer of the sink takes a fixed time (the emulator's
// --latency-ms), as an answer from another region with wait=true does. The
// agent runs with the default config (limits.max_in_flight: auto) and no
// extra environment; the table shows the MB/s at each answer time next to
// the MB/s at 0 ms in the same run, the concurrency the agent settled on, and
// peak RSS. Targets (README "Performance"): >= 0.8 x at 1,000 ms, >= 0.7 x
// at 2,000 ms; peak RSS <= 150 MB. With --rounds N each round runs every
// answer time once, in order; a ratio is taken against the same round's 0 ms
// run (the shared machine's load moves both), and the summary gives the
// median of the rounds' ratios.
import { rmSync } from 'node:fs';
import { ctx } from '../lib/context.mjs';
import { backlogCorpus } from '../lib/corpus.mjs';
import { f0, f1, loadavg, table } from '../lib/format.mjs';
import { runSpoolship } from '../lib/runs.mjs';
import { startSink } from '../lib/sink.mjs';

export async function latencySweep() {
  const { opt, root, sections, summary, log } = ctx;
  const corpus = backlogCorpus(opt.corpusDir, { bytes: opt.size });
  log(`latency-sweep: corpus ${corpus.dir}, ${corpus.bytes} bytes; answer times ${opt.answerTimes.join(', ')} ms`);
  const rows = [];
  const saved = ctx.sink;
  try {
    for (let round = 1; round <= opt.rounds; round++) {
      for (const ms of opt.answerTimes) {
        const sink = await startSink(root, { latencyMs: ms });
        ctx.sink = sink;
        try {
          log(`latency-sweep round ${round}, ${ms} ms: loadavg ${loadavg()}`);
          const r = await runSpoolship(corpus, opt.codec, opt.level, { label: `${ms} ms` });
          Object.assign(r, { answerMs: ms, round });
          rows.push(r);
          log(`latency-sweep ${ms} ms: ${f1(r.bytes / 1e6 / (r.wallMs / 1000))} MB/s, in-flight limit ${r.inFlightLimit}, RSS ${f0(r.rssMB)} MB`);
          if (!opt.keep) rmSync(r.dir, { recursive: true, force: true });
        } finally {
          await sink.close();
        }
      }
    }
  } finally {
    ctx.sink = saved;
  }
  const mbs = (r) => r.bytes / 1e6 / (r.wallMs / 1000);
  /** The same round's 0 ms run: the ratios' denominator. */
  const baseOf = (r) => rows.find((x) => x.answerMs === 0 && x.round === r.round);
  const ratio = (r) => (baseOf(r) ? mbs(r) / mbs(baseOf(r)) : null);
  const cols = [
    ['round', (r) => String(r.round), 'l'],
    ['answer time', (r) => `${r.answerMs} ms`, 'l'],
    ['MB/s', (r) => f1(mbs(r))],
    ['x 0 ms', (r) => ratio(r)?.toFixed(2) ?? '-'],
    ['steady MB/s (10-90 %)', (r) => f1(r.steadyMBs)],
    ['in-flight limit at the end', (r) => f0(r.inFlightLimit)],
    ['requests', (r) => f0(r.requests)],
    ['peak RSS MB', (r) => f0(r.rssMB)],
    ['CPU s/GB', (r) => f1(r.cpuS / (r.bytes / 1e9))],
  ];
  sections.push(
    `### Latency sweep (${(corpus.bytes / 1e6).toFixed(0)} MB backlog, default config: max_in_flight auto, every answer delayed)\n\n${table(cols, rows)}`,
  );
  for (const [ms, target] of [
    [1000, 0.8],
    [2000, 0.7],
  ]) {
    const at = rows.filter((x) => x.answerMs === ms && ratio(x) !== null).sort((a, b) => ratio(a) - ratio(b));
    if (at.length === 0) continue;
    const mid = at[Math.floor(at.length / 2)];
    const each = at.length > 1 ? `, rounds x${at.map((x) => ratio(x).toFixed(2)).join(', x')}` : '';
    summary.push([
      `latency sweep: MB/s at ${ms} ms answers >= ${target} x at 0 ms`,
      `${at.length > 1 ? 'median ' : ''}x${ratio(mid).toFixed(2)} (${f1(mbs(mid))} vs ${f1(mbs(baseOf(mid)))} MB/s; limit ${mid.inFlightLimit}${each})`,
    ]);
  }
  summary.push(['latency sweep: peak RSS <= 150 MB', `${f0(Math.max(...rows.map((r) => r.rssMB)))} MB`]);
}
