// Many small files: 10,000 files of 10-100 KB (--many-files), fresh state;
// descriptors, peak RSS, and the CPU the agent uses once everything is read
// (IDLE_MS of following the files with nothing new).
import { rmSync } from 'node:fs';
import { ctx, MAX_BYTES } from '../lib/context.mjs';
import { manyFilesCorpus } from '../lib/corpus.mjs';
import { f0, f1, loadavg, table } from '../lib/format.mjs';
import { runSpoolship } from '../lib/runs.mjs';

const IDLE_MS = 20_000;
/** The agent's idle_ms default (30 s) and a margin: by then every idle file has given its descriptor back. */
const SETTLE_MS = 35_000;

export async function many() {
  const { opt, sections, summary, log } = ctx;
  log(`many-files corpus: ${opt.manyFiles} files ...`);
  const corpus = manyFilesCorpus(opt.corpusDir, { count: opt.manyFiles });
  log(`many-files corpus ${corpus.dir}: ${corpus.bytes} bytes, ${corpus.lines} lines${corpus.cached ? ' (cached)' : ''}; loadavg ${loadavg()}`);
  const sp = await runSpoolship(corpus, opt.codec, opt.level, { label: `spoolship, ${opt.manyFiles} files`, sampleFds: true, profile: opt.profile, idleMs: IDLE_MS, settleMs: SETTLE_MS });
  log(`many: ${f1(sp.bytes / 1e6 / (sp.wallMs / 1000))} MB/s, fds ${sp.peakFds}, RSS ${f0(sp.rssMB)} MB, first request ${f0(sp.firstRequestMs)} ms, idle CPU ${f1(sp.idleCpuPct)} % then ${f1(sp.idleSteadyCpuPct)} %`);
  if (!opt.keep) rmSync(sp.dir, { recursive: true, force: true });
  sections.push(
    `### Many files (${opt.manyFiles} files of 10-100 KB, ${(corpus.bytes / 1e6).toFixed(0)} MB, fresh state)\n\n` +
      table(
        [
          ['run', (r) => r.name, 'l'],
          ['MB/s', (r) => f1(r.bytes / 1e6 / (r.wallMs / 1000))],
          ['lines/s', (r) => f0(r.lines / (r.wallMs / 1000))],
          ['CPU s/GB', (r) => f1(r.cpuS / (r.bytes / 1e9))],
          ['peak RSS MB', (r) => f0(r.rssMB)],
          ['peak open fds', (r) => f0(r.peakFds)],
          [`CPU % in the ${IDLE_MS / 1000} s after the last ack`, (r) => f1(r.idleCpuPct)],
          [`idle CPU % (${IDLE_MS / 1000} s, from ${SETTLE_MS / 1000} s after)`, (r) => f1(r.idleSteadyCpuPct)],
          ['requests', (r) => f0(r.requests)],
          ['fill %', (r) => f1((100 * r.bytes) / Math.max(1, r.okRequests) / MAX_BYTES)],
          ['first request ms', (r) => f0(r.firstRequestMs)],
        ],
        [sp],
      ),
  );
  if (sp.profile) sections.push(`### Profile of the many-files run (main thread)\n\n${sp.profile}`);
  summary.push([`${opt.manyFiles} files: open fds <= ~1,100`, `${f0(sp.peakFds)}`]);
  summary.push([`${opt.manyFiles} files: RSS <= 200 MB`, `${f0(sp.rssMB)} MB`]);
  summary.push([`${opt.manyFiles} files: idle CPU < 5 % of a core once all is read (from ${SETTLE_MS / 1000} s after the last ack)`, `${f1(sp.idleSteadyCpuPct)} % (first ${IDLE_MS / 1000} s: ${f1(sp.idleCpuPct)} %)`]);
}
