// One measured run of the reference or of the agent on a corpus, against
// ctx.sink, with /proc sampling; and the columns of the throughput tables.
import os from 'node:os';
import { spawn } from 'node:child_process';
import { linkSync, mkdirSync, mkdtempSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { metric, startAgent } from './agent.mjs';
import { ctx, MAX_BYTES, LINGER_MS } from './context.mjs';
import { f0, f1, sleep } from './format.mjs';
import { mainThreadCpuS, readProc, threadTracker } from './proc.mjs';
import { summarizeProfile } from './profile.mjs';
import { diffTotals, sinkTotals } from './sink.mjs';

/**
 * Follows a run at the sink, the same way for the reference and the agent:
 * polls every 5 ms until the first rows arrive, then every 50 ms, until
 * `lines` rows have arrived. Times are ms since `epoch0` (Date.now() at the
 * spawn); `end()` is the sink's own time of the last rows stored, so neither
 * contestant's wall time depends on the polling or on how fast it exits.
 * `pid`: the main thread's CPU is read at 10 % and 90 % too (its steady
 * state, start-up left out).
 */
function watchSink(sink, before, lines, epoch0, { deadlineMs = 900_000, alive = () => true, pid = null } = {}) {
  const w = { firstMs: null, t10: null, t90: null, main10: null, main90: null, done: false };
  const mainAt = () => (pid === null ? null : mainThreadCpuS(pid));
  w.finished = (async () => {
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      // Read once more after the process ended: the reference exits only once all its rows are in.
      const ended = !alive();
      if (Date.now() > deadline) throw new Error('timed out waiting for the sink');
      const d = diffTotals(before, sinkTotals(await sink.stats()));
      const now = Date.now() - epoch0;
      if (w.firstMs === null && d.rows > 0) w.firstMs = now;
      if (d.rows >= 0.1 * lines && w.t10 === null) [w.t10, w.main10] = [now, mainAt()];
      if (d.rows >= 0.9 * lines && w.t90 === null) [w.t90, w.main90] = [now, mainAt()];
      if (d.rows >= lines) {
        w.done = true;
        return;
      }
      if (ended) return;
      await sleep(w.firstMs === null ? 5 : 50);
    }
  })();
  w.end = async () => ((await sink.stats()).last_rows_at ?? Date.now()) - epoch0;
  /** Main-thread CPU s per GB from 10 % to 90 % of the rows (null without both readings). */
  w.steadyMainPerGB = (bytes) => (w.main10 !== null && w.main90 !== null && w.t90 > w.t10 ? (w.main90 - w.main10) / ((0.8 * bytes) / 1e9) : null);
  return w;
}

/**
 * Compressions the reference keeps in flight: as many as the agent's
 * compression.threads: auto gives on this machine (its CPUs; the bench runs
 * without a cgroup limit), so the ratio means the same on 2 cores and on 16.
 * Its libuv pool is sized as the agent's launcher sizes the agent's.
 */
export const REFERENCE_COMPRESSIONS = Math.max(1, os.availableParallelism());
/** Compressions of the reference: the agent's compression.threads when --threads sets it, else the CPUs. */
const referenceCompressions = () => ctx.opt.threads ?? REFERENCE_COMPRESSIONS;

/** Run the reference in its own process; returns a result row. */
export async function runReference(corpus, codec, level) {
  const { root } = ctx;
  const sink = ctx.sink;
  const before = sinkTotals(await sink.stats());
  const sinkCpu0 = readProc(sink.pid)?.cpuS ?? 0;
  const epoch0 = Date.now();
  const child = spawn(
    process.execPath,
    [path.join(root, 'bench/reference.mjs'), '--dir', corpus.dir, '--ds', corpus.ds, '--url', sink.url, '--token', sink.token, '--codec', codec, '--level', String(level), '--lines', String(corpus.lines), '--compress', String(referenceCompressions()), '--rps', String(ctx.opt.referenceRps)],
    { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, UV_THREADPOOL_SIZE: String(Math.max(4, referenceCompressions() + 2)) } },
  );
  let cpuS = 0;
  let hwm = 0;
  let sysS = 0;
  let minflt = 0;
  const threads = threadTracker(child.pid);
  const poll = setInterval(() => {
    const p = readProc(child.pid);
    if (p) {
      threads.update();
      cpuS = p.cpuS;
      sysS = p.sysS;
      minflt = p.minflt;
      hwm = Math.max(hwm, p.hwmMB);
    }
  }, 50);
  let stdout = '';
  child.stdout.on('data', (d) => (stdout += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 600_000);
  let running = true;
  const watch = watchSink(sink, before, corpus.lines, epoch0, { alive: () => running, pid: child.pid });
  const code = await new Promise((r) => child.once('exit', r));
  running = false;
  clearTimeout(timer);
  clearInterval(poll);
  await watch.finished;
  if (code !== 0) throw new Error(`reference exited with ${code}`);
  const wallMs = await watch.end();
  const r = JSON.parse(stdout.trim().split('\n').pop());
  const sinkD = diffTotals(before, sinkTotals(await sink.stats()));
  if (r.lines !== corpus.lines) ctx.log(`WARNING reference acknowledged ${r.lines} of ${corpus.lines} lines`);
  return {
    name: 'reference',
    codec: `${codec}${codec === 'none' ? '' : `:${level}`}`,
    bytes: corpus.bytes,
    lines: r.lines,
    wallMs,
    cpuS,
    sysS,
    minflt,
    threads: threads.byKind(),
    rssMB: hwm,
    requests: sinkD.requests,
    okRequests: r.requests,
    wireBytes: r.wireBytes,
    sinkCpuS: (readProc(sink.pid)?.cpuS ?? 0) - sinkCpu0,
    firstRequestMs: watch.firstMs,
    steadyMBs: watch.t90 > watch.t10 ? (0.8 * corpus.bytes) / 1e6 / ((watch.t90 - watch.t10) / 1000) : null,
    steadyMainPerGB: watch.steadyMainPerGB(corpus.bytes),
  };
}

/** Run spoolship on a corpus until every line is acknowledged. */
export async function runSpoolship(corpus, codec, level, { label = 'spoolship', profile = false, sampleFds = false, stateDir = null, idleMs = 0, settleMs = 0, dist = undefined } = {}) {
  const { root, opt, work } = ctx;
  const sink = ctx.sink;
  const dir = mkdtempSync(path.join(work, 'agent-'));
  const before = sinkTotals(await sink.stats());
  const sinkCpu0 = readProc(sink.pid)?.cpuS ?? 0;
  const agent = await startAgent(root, {
    workDir: dir,
    url: sink.url,
    token: sink.token,
    spoolDir: corpus.dir,
    stateDir: stateDir ?? path.join(dir, 'state'),
    codec,
    level,
    lingerMs: LINGER_MS,
    maxBytes: MAX_BYTES,
    threads: opt.threads,
    sampleFds,
    nodeArgs: profile ? ['--import', path.join(root, 'bench/lib/prof-preload.mjs')] : [],
    env: { ...opt.agentEnv, ...(profile ? { BENCH_PROFILE_OUT: path.join(dir, 'agent.cpuprofile') } : {}) },
    dist: dist ?? opt.agentDist,
  });
  // Progress is read from the sink (rows stored), not from the agent's /metrics:
  // scraping the agent 20 times a second perturbs it (prom-client's default
  // process metrics walk every open handle; see bench/README.md).
  let wallMs;
  let watch;
  try {
    watch = watchSink(sink, before, corpus.lines, agent.epoch0, { alive: () => !agent.exited, pid: agent.pid });
    await watch.finished;
    if (!watch.done) throw new Error(`agent exited (${JSON.stringify(agent.exited)}); see ${dir}/agent.log`);
    wallMs = await watch.end();
    // The agent records the acknowledgements a moment after the sink answered.
    await agent.waitFor((t) => metric(t, 'spoolship_lines_acked_total') >= corpus.lines, { everyMs: 100, timeoutMs: 30_000 });
  } catch (err) {
    await agent.stop();
    throw err;
  }
  // Once everything is acknowledged: the agent's CPU while it only follows
  // the files (rescans, idle checks), as % of one core.
  // Two windows: right after the last acknowledgement (the last checkpoints,
  // descriptors still open), and after idle_ms has passed and every file
  // has given its descriptor back (steady state).
  let idleCpuPct = null;
  let idleSteadyCpuPct = null;
  const cpuOver = async (ms) => {
    const cpu0 = readProc(agent.pid)?.cpuS ?? 0;
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, ms));
    return (100 * ((readProc(agent.pid)?.cpuS ?? 0) - cpu0)) / ((performance.now() - t0) / 1000);
  };
  if (idleMs > 0) {
    idleCpuPct = await cpuOver(idleMs);
    if (settleMs > idleMs) await new Promise((r) => setTimeout(r, settleMs - idleMs));
    if (settleMs > 0) idleSteadyCpuPct = await cpuOver(idleMs);
  }
  const text = await agent.metrics();
  const profFile = path.join(dir, 'agent.cpuprofile');
  const gotProfile = profile ? await agent.dumpProfile(profFile) : false;
  const s = await agent.stop();
  const sinkD = diffTotals(before, sinkTotals(await sink.stats()));
  const row = {
    name: label,
    codec: `${codec}${codec === 'none' ? '' : `:${level}`}`,
    bytes: corpus.bytes,
    lines: metric(text, 'spoolship_lines_acked_total'),
    wallMs,
    cpuS: s.cpuS,
    sysS: s.sysS,
    minflt: s.minflt,
    threads: s.threads,
    rssMB: s.hwmMB,
    requests: sinkD.requests,
    okRequests: metric(text, 'spoolship_requests_total', 'status="200"'),
    wireBytes: metric(text, 'spoolship_bytes_sent_total'),
    batchBytesAvg: metric(text, 'spoolship_batch_bytes_sum') / Math.max(1, metric(text, 'spoolship_batch_bytes_count')),
    inFlightLimit: metric(text, 'spoolship_in_flight_limit'),
    sinkCpuS: (readProc(sink.pid)?.cpuS ?? 0) - sinkCpu0,
    peakFds: s.peakFds,
    idleCpuPct,
    idleSteadyCpuPct,
    firstRequestMs: watch.firstMs,
    steadyMBs: watch.t90 > watch.t10 ? (0.8 * corpus.bytes) / 1e6 / ((watch.t90 - watch.t10) / 1000) : null,
    steadyMainPerGB: watch.steadyMainPerGB(corpus.bytes),
    exit: s.exit,
    rssTrace: s.rssTrace,
    dir,
  };
  if (profile) {
    row.profile = gotProfile ? summarizeProfile(profFile, { root }) : '(no profile written)';
    row.profileFile = gotProfile ? profFile : null;
  }
  return row;
}

export const THROUGHPUT_COLS = [
  ['run', (r) => r.name, 'l'],
  ['codec', (r) => r.codec, 'l'],
  ['MB/s', (r) => f1(r.bytes / 1e6 / (r.wallMs / 1000))],
  ['lines/s', (r) => f0(r.lines / (r.wallMs / 1000))],
  ['steady MB/s (10-90 %)', (r) => f1(r.steadyMBs)],
  ['first rows at sink ms', (r) => f0(r.firstRequestMs)],
  ['CPU s/GB', (r) => f1(r.cpuS / (r.bytes / 1e9))],
  ['of which sys', (r) => f1(r.sysS / (r.bytes / 1e9))],
  ['main s/GB, steady (10-90 %)', (r) => (r.steadyMainPerGB == null ? '-' : r.steadyMainPerGB.toFixed(2))],
  ['CPU s/GB main / pool / reader / V8 / other', (r) => (r.threads ? ['main', 'pool', 'reader', 'v8', 'other'].map((k) => (r.threads[k] ?? 0) / (r.bytes / 1e9)).map((v) => v.toFixed(2)).join(' / ') : '-')],
  ['page faults /MB', (r) => f0(r.minflt / (r.bytes / 1e6))],
  ['peak RSS MB', (r) => f0(r.rssMB)],
  ['requests', (r) => f0(r.requests)],
  ['avg request (raw MB)', (r) => (r.bytes / Math.max(1, r.okRequests) / 1e6).toFixed(2)],
  ['avg request (wire KB)', (r) => f0(r.wireBytes / Math.max(1, r.okRequests) / 1e3)],
  ['fill %', (r) => f1((100 * r.bytes) / Math.max(1, r.okRequests) / MAX_BYTES)],
  ['sink CPU s', (r) => f1(r.sinkCpuS)],
  ['x reference', (r) => (r.ratio ? r.ratio.toFixed(2) : '-')],
  ['x reference, steady', (r) => (r.steadyRatio ? r.steadyRatio.toFixed(2) : '-')],
  ['SIGTERM to exit', (r) => (r.exit ? (r.exit.killed ? `hung, SIGKILL after ${f0(r.exit.stopMs)} ms` : `${f0(r.exit.stopMs)} ms, code ${r.exit.code}`) : '-'), 'l'],
];

export function linkTree(from, to) {
  // Hard links: the same inodes at new paths, so the state recognises the files.
  mkdirSync(to, { recursive: true });
  for (const n of readdirSync(from)) linkSync(path.join(from, n), path.join(to, n));
}
