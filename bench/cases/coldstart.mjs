// Cold start: 10,000 tracked files and a full disk retry queue, then a
// restart; time to the first request, to the new lines, to an empty queue.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { metric, startAgent } from '../lib/agent.mjs';
import { ctx, LINGER_MS, MAX_BYTES } from '../lib/context.mjs';
import { backlogCorpus, makeLine, manyFilesCorpus, rng } from '../lib/corpus.mjs';
import { f0, f1, sleep } from '../lib/format.mjs';
import { summarizeProfile } from '../lib/profile.mjs';
import { linkTree } from '../lib/runs.mjs';
import { sinkTotals, startSink } from '../lib/sink.mjs';

export async function coldstart() {
  const { opt, root, work, sinkLog, sections, summary, log } = ctx;
  const sink = ctx.sink;
  const many = manyFilesCorpus(opt.corpusDir, { count: opt.manyFiles });
  const spool = path.join(work, 'cold-spool');
  const stateDir = path.join(work, 'cold-state');
  try {
    // 1. Fill the disk retry queue first, while the state tracks no other
    // file: ship a backlog to a sink that answers 503 to everything, with
    // codec none so the queue holds its full size. (Filling it after the
    // 10,000 files are tracked reads at ~1-2 MB/s: bench/README.md, finding 5.)
    let queued = { bytes: 0, batches: 0, fillMs: null, ds: null };
    if (opt.queueSize > 0) {
      const qc = backlogCorpus(opt.corpusDir, { bytes: opt.queueSize });
      queued.ds = qc.ds;
      linkTree(path.join(qc.dir, qc.ds), path.join(spool, qc.ds));
      const failing = await startSink(root, { logFile: sinkLog, faults: '[{"kind":"status","status":503,"p":1}]' });
      log(`cold start: filling the disk queue with ${qc.bytes} bytes (503 sink) ...`);
      const dir = mkdtempSync(path.join(work, 'fill-'));
      const agent = await startAgent(root, { env: opt.agentEnv, dist: opt.agentDist, workDir: dir, url: failing.url, token: failing.token, spoolDir: spool, stateDir, codec: 'none', level: 0, lingerMs: LINGER_MS, shutdownTimeoutMs: 15_000 });
      try {
        queued.fillMs = await agent.waitFor((t) => metric(t, 'spoolship_queue_bytes') >= qc.bytes - 3 * MAX_BYTES, { everyMs: 500, timeoutMs: 300_000 });
        await sleep(2 * LINGER_MS); // the last partial batch
        const text = await agent.metrics();
        queued = { ...queued, bytes: metric(text, 'spoolship_queue_bytes'), batches: metric(text, 'spoolship_queue_batches') };
      } finally {
        const s = await agent.stop();
        log(`cold start: queue ${queued.bytes} bytes in ${queued.batches} batches; exit ${JSON.stringify(s.exit)}`);
        await failing.close();
      }
    }
    // 2. Track and ship the 10,000 files with the same state (hard links: the
    // cached corpus is not touched), against a sink that still answers 503
    // for the queued Data Source, so the queue stays as it is.
    linkTree(path.join(many.dir, many.ds), path.join(spool, many.ds));
    {
      const faults = queued.ds ? JSON.stringify([{ kind: 'status', status: 503, p: 1, datasource: queued.ds }]) : null;
      const partial = await startSink(root, { logFile: sinkLog, faults });
      log(`cold start: shipping the ${opt.manyFiles} files into the same state ...`);
      const dir = mkdtempSync(path.join(work, 'track-'));
      const agent = await startAgent(root, { env: opt.agentEnv, dist: opt.agentDist, workDir: dir, url: partial.url, token: partial.token, spoolDir: spool, stateDir, codec: opt.codec, level: opt.level, lingerMs: LINGER_MS, shutdownTimeoutMs: 15_000 });
      try {
        const deadline = performance.now() + 600_000;
        while (((await partial.stats()).rows?.[many.ds] ?? 0) < many.lines) {
          if (agent.exited || performance.now() > deadline) throw new Error(`shipping the ${opt.manyFiles} files did not finish; see ${dir}/agent.log`);
          await sleep(250);
        }
        await agent.waitFor((t) => metric(t, 'spoolship_lines_acked_total', `datasource="${many.ds}"`) >= many.lines, { everyMs: 250, timeoutMs: 60_000 });
        const text = await agent.metrics();
        queued = { ...queued, bytes: metric(text, 'spoolship_queue_bytes'), batches: metric(text, 'spoolship_queue_batches') };
      } finally {
        await agent.stop();
        await partial.close();
      }
    }
    // 3. New lines, more than one batch.max_bytes, so the first new batch closes on size, not on linger_ms.
    const COLD_LINES = 30_000;
    const coldDs = 'bench_cold';
    mkdirSync(path.join(spool, coldDs), { recursive: true });
    const r = rng(99);
    let text = '';
    for (let i = 0; i < COLD_LINES; i++) text += makeLine(r, i);
    writeFileSync(path.join(spool, coldDs, 'new.ndjson'), text);
    // 4. Restart against the healthy sink.
    const before = sinkTotals(await sink.stats());
    const rows0 = (await sink.stats()).rows?.[coldDs] ?? 0;
    const dir = mkdtempSync(path.join(work, 'cold-'));
    const profFile = path.join(dir, 'agent.cpuprofile');
    const agent = await startAgent(root, {
      env: { ...opt.agentEnv, ...(opt.profile ? { BENCH_PROFILE_OUT: profFile } : {}) },
      nodeArgs: opt.profile ? ['--import', path.join(root, 'bench/lib/prof-preload.mjs')] : [],
      dist: opt.agentDist,
      workDir: dir,
      url: sink.url,
      token: sink.token,
      spoolDir: spool,
      stateDir,
      codec: opt.codec,
      level: opt.level,
      lingerMs: LINGER_MS,
      sampleFds: true,
    });
    const deadline = performance.now() + 120_000;
    let firstMs = null;
    while (performance.now() < deadline && !agent.exited) {
      const t = sinkTotals(await sink.stats());
      if (t.requests > before.requests) {
        firstMs = performance.now() - agent.t0;
        // With --profile: what the agent did from spawn to its first request.
        if (opt.profile && (await agent.dumpProfile(profFile))) {
          sections.push(`### Profile of the cold start, spawn to first request (main thread)\n\n${summarizeProfile(profFile, { root })}`);
        }
        break;
      }
      await sleep(10);
    }
    let newMs = null;
    let drainedMs = null;
    while (performance.now() < deadline + 480_000 && !agent.exited && (newMs === null || drainedMs === null)) {
      const now = performance.now() - agent.t0;
      if (newMs === null && ((await sink.stats()).rows?.[coldDs] ?? 0) - rows0 >= COLD_LINES) newMs = now;
      if (drainedMs === null) {
        const m = await agent.metrics().catch(() => '');
        if (m.includes('spoolship_queue_batches') && metric(m, 'spoolship_queue_batches') === 0) drainedMs = now;
      }
      await sleep(200);
    }
    const s = await agent.stop();
    const q = queued.batches ? `${(queued.bytes / 1e6).toFixed(0)} MB disk queue (${queued.batches} batches)` : 'no disk queue';
    log(`cold start: first request ${f0(firstMs)} ms, new lines acked ${f0(newMs)} ms, queue drained ${f0(drainedMs)} ms, RSS ${f0(s.hwmMB)} MB`);
    sections.push(
      `### Cold start: ${opt.manyFiles} tracked files in the spool and state, ${q}, ~13 MB of new lines in a new file\n\n` +
        `| measure | value |\n|---|---:|\n| spawn to first request | ${f0(firstMs)} ms |\n| spawn to all new lines acknowledged | ${f0(newMs)} ms |\n` +
        `| spawn to an empty disk queue | ${f0(drainedMs)} ms |\n| peak RSS | ${f0(s.hwmMB)} MB |\n| peak open fds | ${f0(s.peakFds)} |\n| CPU | ${f1(s.cpuS)} s |\n| SIGTERM to exit | ${s.exit.killed ? 'hung, SIGKILL' : `${f0(s.exit.stopMs)} ms, code ${s.exit.code}`} |\n\n` +
        `Set-up: the queue was filled first (fresh state, a sink answering 503 to everything, codec none so the queue holds the backlog's full size; ${f0(queued.fillMs)} ms), then the ${opt.manyFiles} files were shipped with the same state against a sink still answering 503 for the queued Data Source; then the agent was stopped, the new file written, and the agent started against the healthy sink.\n`,
    );
    summary.push([`cold start to first request <= 2 s (${opt.manyFiles} files, ${q})`, `${f0(firstMs)} ms`]);
    if (!opt.keep) rmSync(dir, { recursive: true, force: true });
  } finally {
    // --keep: the spool and state stay, to start the agent on them again by hand.
    if (!opt.keep) {
      rmSync(spool, { recursive: true, force: true });
      rmSync(stateDir, { recursive: true, force: true });
    }
  }
}
