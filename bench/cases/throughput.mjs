// Backlog throughput: the reference and spoolship, interleaved, on one corpus.
import os from 'node:os';
import { closeSync, openSync, readdirSync, readSync, rmSync } from 'node:fs';
import path from 'node:path';
import { ctx, MAX_BYTES } from '../lib/context.mjs';
import { backlogCorpus } from '../lib/corpus.mjs';
import { f0, f1, loadavg, table, thin } from '../lib/format.mjs';
import { runReference, runSpoolship, THROUGHPUT_COLS } from '../lib/runs.mjs';

export async function throughput() {
  const { opt, sections, summary, log } = ctx;
  log(`corpus ${opt.size} bytes ...`);
  const corpus = backlogCorpus(opt.corpusDir, { bytes: opt.size });
  log(`corpus ${corpus.dir}: ${corpus.files} files, ${corpus.bytes} bytes, ${corpus.lines} lines${corpus.cached ? ' (cached)' : ''}`);
  // Read the corpus once before the rounds: the first contestant of a run
  // otherwise reads it from disk and the second from the page cache (the
  // first round's reference spent ~1.5 s more in the kernel).
  warmPageCache(path.join(corpus.dir, corpus.ds));
  // And warm the sink: a fresh emulator runs its first requests cold (its
  // JIT), which slowed whichever contestant went first (the reference, by
  // 0.5 s of sink CPU on 1 GB). One reference run, not recorded.
  if (!opt.noReference) await runReference(corpus, opt.codec, opt.level);
  const rows = [];
  for (let round = 0; round < opt.rounds; round++) {
    log(`throughput round ${round + 1}: loadavg ${loadavg()}`);
    const ref = opt.noReference ? null : await runReference(corpus, opt.codec, opt.level);
    if (ref) {
      rows.push(ref);
      log(`reference ${f1(ref.bytes / 1e6 / (ref.wallMs / 1000))} MB/s`);
    }
    if (opt.baselineDist) {
      // Another build (e.g. before a restructure), in the same round against the same reference.
      const base = await runSpoolship(corpus, opt.codec, opt.level, { label: 'spoolship (baseline)', dist: opt.baselineDist });
      base.ratio = ref ? ref.wallMs / base.wallMs : null;
      base.steadyRatio = ref && base.steadyMBs && ref.steadyMBs ? base.steadyMBs / ref.steadyMBs : null;
      rows.push(base);
      log(`baseline ${f1(base.bytes / 1e6 / (base.wallMs / 1000))} MB/s (x${base.ratio?.toFixed(2)}), RSS ${f0(base.rssMB)} MB`);
      if (!opt.keep) rmSync(base.dir, { recursive: true, force: true });
    }
    const sp = await runSpoolship(corpus, opt.codec, opt.level, { profile: opt.profile && round === 0 });
    sp.ratio = ref ? ref.wallMs / sp.wallMs : null;
    sp.steadyRatio = ref && sp.steadyMBs && ref.steadyMBs ? sp.steadyMBs / ref.steadyMBs : null;
    rows.push(sp);
    log(`spoolship ${f1(sp.bytes / 1e6 / (sp.wallMs / 1000))} MB/s (x${sp.ratio?.toFixed(2)}), RSS ${f0(sp.rssMB)} MB, exit ${JSON.stringify(sp.exit)}`);
    if (sp.profile) sections.push(`### Profile of the spoolship run (main thread; V8's sampling profiler as in \`node --cpu-prof\`, via bench/lib/prof-preload.mjs)\n\n${sp.profile}`);
    if (!opt.keep) rmSync(sp.dir, { recursive: true, force: true });
  }
  sections.unshift(
    `### Backlog throughput (${(corpus.bytes / 1e6).toFixed(0)} MB, ${f0(corpus.lines)} lines of ~${Math.round(corpus.bytes / corpus.lines)} B, ${corpus.files} files)\n\n` +
      table(THROUGHPUT_COLS, rows) +
      `\nRSS trace of the last spoolship run ([s since start, MB], ~1 s samples, thinned to 40): ${JSON.stringify(thin(rows.at(-1).rssTrace, 40).map(([ms, mb]) => [Math.round(ms / 1000), mb]))}\n`,
  );
  const sp = rows.filter((r) => r.name === 'spoolship');
  const best = sp.reduce((a, b) => ((a.ratio ?? 0) >= (b.ratio ?? 0) ? a : b));
  if (!opt.noReference) {
    const ratios = sp.map((r) => r.ratio).sort((a, b) => a - b);
    const median = ratios[Math.floor(ratios.length / 2)];
    summary.push(['throughput >= 0.9 x reference (spawn to last ack)', `median x${median.toFixed(2)}, best x${ratios.at(-1).toFixed(2)} (of ${sp.length})`]);
    const steady = sp.map((r) => r.steadyRatio ?? 0).sort((a, b) => a - b);
    summary.push(['same, steady state (10 % to 90 % of lines acknowledged)', `median x${steady[Math.floor(steady.length / 2)].toFixed(2)}, best x${steady.at(-1).toFixed(2)}`]);
    const cpuRatio = rows.filter((r) => r.name === 'reference').reduce((a, r) => a + r.cpuS, 0) / sp.reduce((a, r) => a + r.cpuS, 0);
    summary.push(['CPU per GB, reference / spoolship (robust to the shared machine)', `x${cpuRatio.toFixed(2)}`]);
  }
  const mainPerGB = sp.map((r) => (r.threads?.main ?? NaN) / (r.bytes / 1e9)).sort((a, b) => a - b);
  if (mainPerGB.every(Number.isFinite)) summary.push(['main-thread CPU <= 0.6 s per GB', `${mainPerGB.map((x) => x.toFixed(2)).join(', ')}`]);
  const steadyMain = sp.map((r) => r.steadyMainPerGB).filter(Number.isFinite).sort((a, b) => a - b);
  if (steadyMain.length > 0) summary.push(['same, steady state (10 % to 90 % of the rows stored: start-up left out)', steadyMain.map((x) => x.toFixed(2)).join(', ')]);
  // 150 MB with up to 2 compression threads, 250 MB with 16 (README, Memory).
  const rssTarget = (opt.threads ?? os.availableParallelism()) <= 2 ? 150 : 250;
  summary.push([`peak RSS <= ${rssTarget} MB (backlog)`, `${f0(Math.max(...sp.map((r) => r.rssMB)))} MB`]);
  const base = rows.filter((r) => r.name === 'spoolship (baseline)');
  if (base.length > 0) {
    const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const mbs = (r) => r.bytes / 1e6 / (r.wallMs / 1000);
    summary.push(['this build vs the baseline build: MB/s (median of rounds)', `${f1(med(sp.map(mbs)))} vs ${f1(med(base.map(mbs)))} (x${(med(sp.map(mbs)) / med(base.map(mbs))).toFixed(2)})`]);
    summary.push(['this build vs the baseline build: peak RSS (max of rounds)', `${f0(Math.max(...sp.map((r) => r.rssMB)))} vs ${f0(Math.max(...base.map((r) => r.rssMB)))} MB`]);
  }
  summary.push(['average request fill >= 95 % of max_bytes', `${f1((100 * best.bytes) / best.okRequests / MAX_BYTES)} %`]);
}

function warmPageCache(dir) {
  const buf = Buffer.allocUnsafe(8 << 20);
  for (const name of readdirSync(dir)) {
    const fd = openSync(path.join(dir, name), 'r');
    while (readSync(fd, buf, 0, buf.length, null) > 0);
    closeSync(fd);
  }
}
