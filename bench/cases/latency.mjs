// Steady rate: lines appended at a fixed rate; line-to-ack percentiles.
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { metric, startAgent } from '../lib/agent.mjs';
import { ctx, LINGER_MS } from '../lib/context.mjs';
import { makeLine, rng } from '../lib/corpus.mjs';
import { f0, f1, loadavg, sleep } from '../lib/format.mjs';
import { readProc } from '../lib/proc.mjs';

export async function latency() {
  const { opt, root, work, sections, summary, log } = ctx;
  const sink = ctx.sink;
  const dir = mkdtempSync(path.join(work, 'latency-'));
  const spool = path.join(dir, 'spool');
  const ds = 'bench_live';
  mkdirSync(path.join(spool, ds), { recursive: true });
  const file = path.join(spool, ds, 'live.ndjson');
  writeFileSync(file, '');
  log(`latency: ${opt.latencyRate / 1e6} MB/s for ${opt.latencySeconds} s; loadavg ${loadavg()}`);
  const agent = await startAgent(root, { env: opt.agentEnv, dist: opt.agentDist, workDir: dir, url: sink.url, token: sink.token, spoolDir: spool, stateDir: path.join(dir, 'state'), codec: opt.codec, level: opt.level, lingerMs: LINGER_MS });
  await agent.waitFor(() => true, { timeoutMs: 30_000 });
  const cpu0 = readProc(agent.pid)?.cpuS ?? 0;
  const rows0 = (await sink.stats()).rows?.[ds] ?? 0;
  const writes = []; // [t, cumulative lines]
  const acks = []; // [t, acked]
  const r = rng(5);
  let seq = 0;
  let written = 0;
  let stopPolling = false;
  const poller = (async () => {
    while (!stopPolling) {
      try {
        // Rows the sink stored (it answers 200 right after): no load on the agent.
        const st = await sink.stats();
        acks.push([performance.now(), (st.rows?.[ds] ?? 0) - rows0]);
      } catch {
        /* ignore */
      }
      await sleep(20);
    }
  })();
  const TICK_MS = 10;
  const t0 = performance.now();
  let bytesDue = 0;
  let bytesWritten = 0;
  while (performance.now() - t0 < opt.latencySeconds * 1000) {
    bytesDue = ((performance.now() - t0) / 1000) * opt.latencyRate;
    let chunk = '';
    while (bytesWritten + chunk.length < bytesDue) chunk += makeLine(r, seq++);
    if (chunk) {
      appendFileSync(file, chunk);
      bytesWritten += chunk.length;
      written = seq;
      writes.push([performance.now(), written]);
    }
    await sleep(TICK_MS);
  }
  const steadyCpu = (readProc(agent.pid)?.cpuS ?? 0) - cpu0;
  const steadyRss = readProc(agent.pid)?.rssMB ?? 0;
  const drainDeadline = performance.now() + 30_000;
  while (performance.now() < drainDeadline && (acks.at(-1)?.[1] ?? 0) < written) await sleep(50);
  stopPolling = true;
  await poller;
  const text = await agent.metrics();
  const s = await agent.stop();
  // Each written chunk's lines are acknowledged at the first poll that counts them.
  const lat = [];
  let j = 0;
  let prev = 0;
  for (const [tw, cum] of writes) {
    while (j < acks.length && acks[j][1] < cum) j++;
    const ms = j < acks.length ? acks[j][0] - tw : Infinity;
    lat.push([ms, cum - prev]);
    prev = cum;
  }
  lat.sort((a, b) => a[0] - b[0]);
  const pctl = (p) => {
    let need = p * written;
    for (const [ms, n] of lat) if ((need -= n) <= 0) return ms;
    return lat.at(-1)?.[0];
  };
  const p50 = pctl(0.5);
  const p99 = pctl(0.99);
  const max = lat.at(-1)?.[0];
  const hist = metric(text, 'spoolship_ack_latency_seconds_sum') / Math.max(1, metric(text, 'spoolship_ack_latency_seconds_count'));
  log(`latency: p50 ${f0(p50)} ms, p99 ${f0(p99)} ms, max ${f0(max)} ms`);
  sections.push(
    `### Steady rate: ${opt.latencyRate / 1e6} MB/s for ${opt.latencySeconds} s, line-to-ack (linger_ms ${LINGER_MS})\n\n` +
      `| measure | value |\n|---|---:|\n| lines written | ${f0(written)} |\n| lines acknowledged | ${f0(metric(text, 'spoolship_lines_acked_total'))} |\n` +
      `| p50 line-to-ack | ${f0(p50)} ms |\n| p99 line-to-ack | ${f0(p99)} ms |\n| max | ${f0(max)} ms |\n` +
      `| agent's mean batch ack latency (first line of batch) | ${f0(hist * 1000)} ms |\n| requests | ${f0(metric(text, 'spoolship_requests_total'))} |\n` +
      `| agent CPU at steady rate | ${f1((100 * steadyCpu) / opt.latencySeconds)} % of one core |\n| RSS at the end of the steady phase | ${f0(steadyRss)} MB |\n| peak RSS | ${f0(s.hwmMB)} MB |\n\n` +
      `Line-to-ack = time the bench appended the line (10 ms ticks) to the first poll of the sink's stats (every ~20 ms) whose stored rows cover it (the sink answers 200 right after storing); includes discovery (the directory watch) and polling granularity.\n`,
  );
  summary.push([`p99 line-to-ack <= linger_ms + 250 ms = ${LINGER_MS + 250} ms`, `${f0(p99)} ms`]);
  if (!opt.keep) rmSync(dir, { recursive: true, force: true });
}
