// A fleet on one shared budget: N agent processes (default 20) against one
// emulator that allows 100 requests in any sliding second, sharing the
// organization's budget through a real redis-server (limits.redis_url, one
// budget_id). Each agent has a trickle (a line every 200 ms) and one backlog
// of its own. Targets (issue "Real networks"): busiest sliding second at the
// server <= 100; while every agent still has backlog, each gets >= 0.5 x its
// fair share of the requests. Needs redis-server (Debian: redis-server).
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { freePort } from '../lib/agent.mjs';
import { ctx } from '../lib/context.mjs';
import { f0, f1, loadavg, sleep, table } from '../lib/format.mjs';

const LIMIT = 100;
const BATCH_BYTES = 1000;

export async function fleet() {
  const { opt, root, work, sections, summary, log } = ctx;
  if (spawnSync('redis-server', ['--version']).status !== 0) throw new Error('the fleet case needs redis-server on PATH (Debian: apt-get install redis-server)');
  // The emulator in this process, for its per-request records (build/tsc is written by npm run build).
  const { startEmulator } = await import(pathToFileURL(path.join(root, 'build/tsc/emulator/index.js')).href);
  const dir = mkdtempSync(path.join(work, 'fleet-'));
  const redisPort = await freePort();
  const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  const emu = await startEmulator({ listen: '127.0.0.1:0', dataDir: null, rps: LIMIT, recordRequests: true });
  const agents = [];
  let trickle = null;
  try {
    await sleep(300);
    const n = opt.fleetAgents;
    log(`fleet: ${n} agents, ${opt.fleetLines} backlog lines each (~${Math.round((opt.fleetLines * 100) / BATCH_BYTES)} requests), Redis on ${redisPort}; loadavg ${loadavg()}`);
    for (let i = 1; i <= n; i++) {
      const home = path.join(dir, `agent${i}`);
      mkdirSync(path.join(home, 'spool', `backlog_${i}`), { recursive: true });
      mkdirSync(path.join(home, 'spool', `trickle_${i}`), { recursive: true });
      const cfg = path.join(home, 'spoolship.yaml');
      writeFileSync(
        cfg,
        JSON.stringify({
          api: { base_url: emu.url, token: emu.token, timeout_ms: 10_000 },
          spool: { dir: path.join(home, 'spool'), idle_ms: 200 },
          state_dir: path.join(home, 'state'),
          batch: { max_bytes: BATCH_BYTES, linger_ms: 200 },
          compression: { codec: 'none' },
          limits: { requests_per_second: LIMIT, budget_id: 'bench-fleet', redis_url: `redis://127.0.0.1:${redisPort}` },
          admin: { listen: '' },
          log: { level: 'warn', format: 'json' },
        }),
      );
      const logFd = openSync(path.join(home, 'agent.log'), 'a');
      const child = spawn(path.join(root, 'dist/cli.js'), ['run', '-c', cfg], {
        cwd: home,
        stdio: ['ignore', 'ignore', logFd],
        env: { ...process.env, PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}` },
      });
      closeSync(logFd);
      const exited = new Promise((r) => child.once('exit', (code) => r(code)));
      agents.push({ i, home, child, exited });
    }
    // Agents log at warn: started when the state lock's pid file appears.
    const { existsSync } = await import('node:fs');
    const deadline = Date.now() + 60_000;
    while (!agents.every((a) => existsSync(path.join(a.home, 'state', 'control.sock')))) {
      if (Date.now() > deadline) throw new Error('the fleet agents did not start within 60 s');
      await sleep(100);
    }
    const line = (tag, k) => JSON.stringify({ tag, k, pad: 'p'.repeat(60) });
    trickle = setInterval(() => {
      for (const a of agents) appendFileSync(path.join(a.home, 'spool', `trickle_${a.i}`, 't.ndjson'), `${line('t', Date.now())}\n`);
    }, 200);
    const t0 = Date.now();
    for (const a of agents) writeFileSync(path.join(a.home, 'spool', `backlog_${a.i}`, 'b.ndjson'), `${Array.from({ length: opt.fleetLines }, (_, k) => line('b', k)).join('\n')}\n`);
    const done = () => agents.every((a) => (emu.stats().rows[`backlog_${a.i}`] ?? 0) >= opt.fleetLines);
    while (!done()) {
      if (Date.now() - t0 > 20 * 60_000) throw new Error('the fleet backlogs did not arrive within 20 min');
      await sleep(200);
    }
    const wallMs = Date.now() - t0;
    clearInterval(trickle);
    trickle = null;
    const reqs = emu.requests();
    const times = reqs.map((r) => r.at).sort((a, b) => a - b);
    let busiest = 0;
    for (let lo = 0, hi = 0; hi < times.length; hi++) {
      while (times[hi] - times[lo] >= 1000) lo++;
      busiest = Math.max(busiest, hi - lo + 1);
    }
    // While every agent still has backlog: from the last agent's first backlog request to the first agent's last.
    const backlogTimes = (i) => reqs.filter((r) => r.name === `backlog_${i}`).map((r) => r.at);
    const from = Math.max(...agents.map((a) => Math.min(...backlogTimes(a.i))));
    const to = Math.min(...agents.map((a) => Math.max(...backlogTimes(a.i))));
    const inWindow = reqs.filter((r) => r.at >= from && r.at <= to);
    const per = agents.map((a) => inWindow.filter((r) => r.name === `backlog_${a.i}` || r.name === `trickle_${a.i}`).length);
    const fair = inWindow.length / agents.length;
    // Agents that lost the shared budget (Redis too slow to answer, or a broken key) ship on their local fallback meanwhile.
    const fallbacks = agents.map((a) => (readFileSync(path.join(a.home, 'agent.log'), 'utf8').match(/"event":"budget_(unreachable|broken)"/g) ?? []).length);
    const rows = [
      {
        agents: agents.length,
        requests: reqs.length,
        wallMs,
        busiest,
        r429: reqs.filter((r) => r.outcome === 429).length,
        windowS: (to - from) / 1000,
        fair,
        min: Math.min(...per),
        max: Math.max(...per),
        fallbackAgents: fallbacks.filter((n) => n > 0).length,
        fallbacks: fallbacks.reduce((a, b) => a + b, 0),
      },
    ];
    const cols = [
      ['agents', (r) => f0(r.agents)],
      ['requests', (r) => f0(r.requests)],
      ['backlog wall s', (r) => f1(r.wallMs / 1000)],
      ['busiest sliding second', (r) => f0(r.busiest)],
      ['429s', (r) => f0(r.r429)],
      ['all-backlogged window s', (r) => f1(r.windowS)],
      ['fair share (requests)', (r) => f1(r.fair)],
      ['fewest / most per agent', (r) => `${f0(r.min)} / ${f0(r.max)}`],
      ['fewest x fair', (r) => (r.fair > 0 ? (r.min / r.fair).toFixed(2) : '-')],
      ['agents that fell back to the local budget (times)', (r) => `${f0(r.fallbackAgents)} (${f0(r.fallbacks)})`],
    ];
    sections.push(`### Fleet on one Redis budget (${agents.length} agents, ${LIMIT} req/s, trickle + ${opt.fleetLines}-line backlog each)\n\n${table(cols, rows)}`);
    summary.push([`fleet: busiest sliding second <= ${LIMIT}`, `${busiest}`]);
    summary.push(['fleet: each agent >= 0.5 x its fair share while all are backlogged', rows[0].fair > 0 ? `fewest x${(rows[0].min / rows[0].fair).toFixed(2)}` : '-']);
    log(`fleet: busiest ${busiest}, fewest x${(rows[0].min / Math.max(1, fair)).toFixed(2)} of fair in ${rows[0].windowS.toFixed(1)} s`);
  } finally {
    if (trickle) clearInterval(trickle);
    for (const a of agents) a.child.kill('SIGTERM');
    await Promise.all(agents.map((a) => Promise.race([a.exited, sleep(15_000).then(() => a.child.kill('SIGKILL'))])));
    await emu.close();
    redis.kill('SIGKILL');
    if (!opt.keep) rmSync(dir, { recursive: true, force: true });
  }
}
