#!/usr/bin/env node
// `npm run bench`: spoolship against the in-run reference (issue 8).
//
//   npm run bench                                  # everything, 1 GB corpus
//   npm run bench -- --size 200MB --cases throughput
//   npm run bench -- --size 200MB --cases sweep --sweep zstd:1,zstd:3,gzip:6,none:0
//   npm run bench -- --cases many,coldstart --many-files 2000
//   npm run bench -- --cases latency --latency-seconds 20
//   npm run bench -- --cases latency-sweep --answer-times 0,1000,2000
//   npm run bench -- --cases fleet --fleet-agents 20
//   npm run bench -- --cases outage --outage-size 300MB --outage-seconds 25
//   npm run bench -- --size 200MB --cases throughput --profile
//
// Every case is bounded (timeouts) and talks only to 127.0.0.1. The sink is
// the emulator in count-only mode, in its own process. Results: a table on
// stdout and a Markdown file in bench/results/. Benchmarks are not tests: no
// assertion on speed here; the targets are printed next to the numbers.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { coldstart } from './cases/coldstart.mjs';
import { latency } from './cases/latency.mjs';
import { latencySweep } from './cases/latency-sweep.mjs';
import { fleet } from './cases/fleet.mjs';
import { outage } from './cases/outage.mjs';
import { many } from './cases/many.mjs';
import { sweep } from './cases/sweep.mjs';
import { throughput } from './cases/throughput.mjs';
import { ctx, LINGER_MS, MAX_BYTES } from './lib/context.mjs';
import { loadavg } from './lib/format.mjs';
import { startSink } from './lib/sink.mjs';
import { REFERENCE_COMPRESSIONS } from './lib/runs.mjs';

const root = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
const CASES = { throughput, sweep, many, coldstart, latency, 'latency-sweep': latencySweep, fleet, outage };
const ALL_CASES = Object.keys(CASES);
/** What the Dockerfile and deploy/systemd/spoolship.service used to set for the agent (bench/README.md, findings 14 and 20); --deploy-env. */
const DEPLOY_ENV = { MALLOC_ARENA_MAX: '1', NODE_OPTIONS: '--max-semi-space-size=1' };

// ---------- flags ----------
function parseSize(s) {
  const m = /^(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|KiB|MiB|GiB)?$/i.exec(String(s).trim());
  if (!m) throw new Error(`bad size ${JSON.stringify(s)}; give e.g. 200MB or 1GB`);
  const mult = { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 }[(m[2] ?? 'B').toLowerCase()];
  return Math.round(Number(m[1]) * mult);
}
const argv = process.argv.slice(2);
const flag = (name, def) => {
  const i = argv.indexOf(`--${name}`);
  return i === -1 ? def : argv[i + 1];
};
const has = (name) => argv.includes(`--${name}`);
if (has('help')) {
  console.log(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1, 10).join('\n'));
  process.exit(0);
}
const opt = {
  size: parseSize(flag('size', '1GB')),
  codec: flag('codec', 'zstd'),
  level: Number(flag('level', '3')),
  cases: flag('cases', ALL_CASES.join(',')).split(','),
  sweep: flag('sweep', 'zstd:1,zstd:3,zstd:6,gzip:1,gzip:6,none:0')
    .split(',')
    .map((s) => ({ codec: s.split(':')[0], level: Number(s.split(':')[1] ?? 0) })),
  sweepSize: null,
  manyFiles: Number(flag('many-files', '10000')),
  latencyRate: parseSize(flag('latency-rate', '5MB')),
  latencySeconds: Number(flag('latency-seconds', '60')),
  answerTimes: flag('answer-times', '0,250,1000,2000').split(',').map(Number),
  fleetAgents: Number(flag('fleet-agents', '20')),
  fleetLines: Number(flag('fleet-lines', '1500')),
  outageSize: parseSize(flag('outage-size', '300MB')),
  outageSeconds: Number(flag('outage-seconds', '25')),
  queueSize: parseSize(flag('queue-size', '1GB')),
  rounds: Number(flag('rounds', '3')),
  // compression.threads of the agent and the reference's compressions (default: auto, the CPUs)
  threads: flag('threads', null) === null ? null : Number(flag('threads', null)),
  // The reference's requests per second (the platform's budget, as limits.requests_per_second); 0: unpaced
  referenceRps: Number(flag('reference-rps', '100')),
  profile: has('profile'),
  noReference: has('no-reference'),
  keep: has('keep'),
  corpusDir: path.resolve(flag('corpus-dir', path.join(root, 'bench/corpus'))),
  out: flag('out', null),
  // The agent gets no extra environment: started as the `spoolship` program,
  // its launcher applies the memory settings itself (src/cli/memory.ts).
  // --launch node starts `node dist/cli.js run` instead (on Node 20: without
  // them); --deploy-env adds what the Dockerfile and the unit used to set;
  // experiments: --agent-env UV_THREADPOOL_SIZE=8
  launch: flag('launch', 'program'),
  agentEnv: {
    ...(has('deploy-env') ? DEPLOY_ENV : {}),
    ...Object.fromEntries(argv.flatMap((v, i) => (v === '--agent-env' ? [argv[i + 1].split(/=(.*)/s).slice(0, 2)] : []))),
  },
  // Experiments only: run another build of the agent (a patched copy of dist/)
  agentDist: flag('agent-dist', null),
  baselineDist: flag('baseline-dist', null),
};
process.env.BENCH_AGENT_LAUNCH = opt.launch;
opt.sweepSize = parseSize(flag('sweep-size', String(Math.min(opt.size, 200e6))));
for (const c of opt.cases) if (!ALL_CASES.includes(c)) throw new Error(`--cases: unknown case ${c}; use ${ALL_CASES.join(',')}`);
if (!existsSync(path.join(root, 'dist/cli.js'))) {
  console.error('dist/cli.js is missing: run `npm run build` first');
  process.exit(2);
}

// ---------- set-up ----------
const work = mkdtempSync(path.join(os.tmpdir(), 'spoolship-bench-'));
Object.assign(ctx, { root, opt, work, sinkLog: path.join(work, 'sink.log') });
const { log, sections, summary } = ctx;

function build() {
  let head = '?';
  try {
    head = readFileSync(path.join(root, '.git/HEAD'), 'utf8').trim();
    if (head.startsWith('ref: ')) head = readFileSync(path.join(root, '.git', head.slice(5)), 'utf8').trim();
  } catch {
    /* not a git checkout */
  }
  const built = statSync(path.join(root, 'dist/cli.js')).mtime.toISOString().slice(0, 16).replace('T', ' ');
  return `commit ${head.slice(0, 8)}, dist/ built ${built} UTC (the working tree may hold others' uncommitted changes)`;
}

function machine() {
  const cpus = os.cpus();
  return (
    `${cpus.length} x ${cpus[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM, ` +
    `Linux ${os.release()}, Node ${process.version}; loadavg at start ${loadavg()} (shared machine: other work was running)`
  );
}

// ---------- main ----------
const started = new Date();
const machineDesc = machine();
const buildDesc = build();
log(machineDesc);
log(`work dir ${work}`);
async function ensureSink() {
  if (ctx.sink && !ctx.sink.exit) return;
  if (ctx.sink) log(`the sink exited (${JSON.stringify(ctx.sink.exit)}); starting a new one`);
  ctx.sink = await startSink(root, { logFile: ctx.sinkLog });
  log(`sink ${ctx.sink.url} (pid ${ctx.sink.pid})`);
}
let failed = null;
try {
  for (const c of ALL_CASES) {
    if (!opt.cases.includes(c)) continue;
    try {
      await ensureSink();
      await CASES[c]();
    } catch (err) {
      // One failed case does not lose the others' results.
      failed = err;
      log(`case ${c} FAILED: ${err.stack ?? err}`);
      sections.push(`### ${c}: FAILED\n\n${String(err.message ?? err)}\n`);
    }
  }
} finally {
  await ctx.sink?.close();
  if (!opt.keep) rmSync(work, { recursive: true, force: true });
}

const md =
  `## spoolship bench, ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC\n\n` +
  `Machine: ${machineDesc}; loadavg at end ${loadavg()}.\n\n` +
  `Build: ${buildDesc}.\n\n` +
  `Command: \`npm run bench -- ${argv.join(' ')}\`. Agent config: codec ${opt.codec}:${opt.level}, batch.max_bytes ${MAX_BYTES}, linger_ms ${LINGER_MS}, wait=true, ` +
  `checkpoints and the disk retry queue on (defaults), compression.threads ${opt.threads ?? 'auto'}. ` +
  `Reference: ${opt.threads ?? REFERENCE_COMPRESSIONS} compressions in flight, ${opt.referenceRps > 0 ? `requests paced at ${opt.referenceRps}/s as the agent's budget paces its own` : 'requests unpaced'}. ` +
  `Agent started as ${opt.launch === 'node' ? '`node dist/cli.js run`' : 'the `spoolship` program (dist/cli.js; its launcher applies the memory settings)'}; environment: ${Object.keys(opt.agentEnv).length ? JSON.stringify(opt.agentEnv) : 'none added'}. ` +
  `${opt.agentDist ? `Agent build (experiment): ${opt.agentDist}. ` : ''}` +
  `${opt.baselineDist ? `Baseline build (throughput rounds also run it, as "spoolship (baseline)"): ${opt.baselineDist}. ` : ''}` +
  `Sink: \`spoolship emulator --no-validate\` (count-only, decodes every body) in its own process, sharing the machine's cores. ` +
  `MB/s = corpus bytes / wall time from process spawn to the last acknowledgement (includes start-up). CPU = utime + stime of the measured process only.\n\n` +
  (summary.length ? `| target | measured |\n|---|---:|\n${summary.map(([a, b]) => `| ${a} | ${b} |`).join('\n')}\n\n` : '') +
  sections.join('\n') +
  (failed ? `\n**At least one case failed** (see its section).\n` : '');
console.log(`\n${md}`);
// Seconds in the name: two runs started in the same minute keep both files.
const outFile = opt.out ?? path.join(root, 'bench/results', `${started.toISOString().slice(0, 19).replace(/[:T]/g, '-')}-${opt.cases.join('+')}-${Math.round(opt.size / 1e6)}MB${opt.launch === 'node' ? '-launch-node' : ''}.md`);
mkdirSync(path.dirname(outFile), { recursive: true });
writeFileSync(outFile, md);
log(`written ${outFile}`);
process.exit(failed ? 1 : 0);
