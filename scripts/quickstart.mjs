#!/usr/bin/env node
// `npm start`: the whole pipeline with no account. Runs `spoolship run` on
// config/spoolship.yaml (api.base_url: embedded), writes sample events into
// ./spool/<datasource>/*.ndjson (rotating a file now and then, as logrotate
// would), and prints progress read from the agent's /metrics.
//
//   npm start                 # until Ctrl-C
//   npm start -- --seconds 20 # stop by itself after 20 s
//
// The admin address is the agent's own: config/spoolship.yaml with the
// SPOOLSHIP_* overrides, as `spoolship check-config` resolves it. The script
// exits with the agent's exit code. Under a supervisor, npm 11 exits at once
// on SIGTERM without stopping its script: the script watches the processes
// that started it and, when one is gone, stops the agent the same way
// (SIGTERM: drain, persist, exit 0).
import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, renameSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const root = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const secondsArg = args.indexOf('--seconds');
const seconds = secondsArg >= 0 ? Number(args[secondsArg + 1]) : Infinity;
const RATE_PER_SECOND = 500;
const DATASOURCES = ['web_events', 'app_logs'];
const ROTATE_EVERY_MS = 10_000;
const PARENT_CHECK_MS = 1000;
const cli = path.join(root, 'dist/cli.js');
const configFile = path.join(root, 'config/spoolship.yaml');

/** `http://host:port` of the agent's admin endpoints, or null when `admin.listen` is "" (disabled). */
function adminUrl() {
  let effective;
  try {
    // Its warnings (stderr) are dropped: the agent prints the same ones at start.
    effective = parse(execFileSync(process.execPath, [cli, 'check-config', '-c', configFile], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
  } catch (err) {
    process.stderr.write(err.stderr ?? `${err.message}\n`);
    process.exit(typeof err.status === 'number' ? err.status : 2);
  }
  const listen = effective?.admin?.listen;
  if (!listen) return null;
  const colon = listen.lastIndexOf(':');
  let host = listen.slice(0, colon);
  if (host === '' || host === '0.0.0.0') host = '127.0.0.1';
  else if (host === '[::]') host = '[::1]';
  return `http://${host}:${listen.slice(colon + 1)}`;
}

/** The processes above this one (npm, its shell), each as pid and start time so a reused pid is not taken for it. */
function ancestors() {
  const chain = [];
  let pid = process.ppid;
  while (pid > 1 && chain.length < 3) {
    const stat = procStat(pid);
    if (stat === null) break;
    chain.push({ pid, started: stat.started });
    pid = stat.ppid;
  }
  return chain;
}

/** Parent pid and start time (field 22) from /proc/PID/stat; null when the process is gone or /proc is absent. */
function procStat(pid) {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) is in parentheses and may hold spaces.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  if (fields[0] === 'Z') return null; // exited, not yet reaped
  return { ppid: Number(fields[1]), started: fields[19] };
}

function ancestorGone(chain, firstParent) {
  if (chain.length === 0) return process.ppid !== firstParent; // no /proc (macOS): only the direct parent
  return chain.some(({ pid, started }) => procStat(pid)?.started !== started);
}

const ADMIN = adminUrl();
const spoolDir = path.join(root, 'spool');
for (const ds of DATASOURCES) mkdirSync(path.join(spoolDir, ds), { recursive: true });

// As a program (the /bin/sh launcher of dist/cli.js), so the agent runs with its memory settings.
const agent = spawn(cli, ['run', '-c', configFile], {
  cwd: root,
  stdio: ['ignore', 'inherit', 'inherit'],
});
agent.on('exit', (code, signal) => {
  console.log(`\n[quickstart] spoolship exited with ${signal === null ? `code ${code}` : signal}`);
  process.exit(code ?? 1);
});

let seq = 0;
let lastRotate = Date.now();
const paths = ['/home', '/pricing', '/docs', '/signup', '/blog'];
const levels = ['info', 'info', 'info', 'warn', 'error'];
function writeBatch(n) {
  const now = new Date().toISOString();
  const web = [];
  const app = [];
  for (let i = 0; i < n; i++) {
    seq++;
    web.push(JSON.stringify({ ts: now, seq, path: paths[seq % paths.length], status: seq % 17 === 0 ? 500 : 200, duration_ms: seq % 250 }));
    app.push(JSON.stringify({ ts: now, seq, level: levels[seq % levels.length], msg: `request ${seq} handled` }));
  }
  appendFileSync(path.join(spoolDir, 'web_events', 'current.ndjson'), `${web.join('\n')}\n`);
  appendFileSync(path.join(spoolDir, 'app_logs', 'current.ndjson'), `${app.join('\n')}\n`);
  if (Date.now() - lastRotate >= ROTATE_EVERY_MS) {
    // rename-and-create rotation: the agent finishes the renamed file, then follows the new one.
    lastRotate = Date.now();
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    renameSync(path.join(spoolDir, 'app_logs', 'current.ndjson'), path.join(spoolDir, 'app_logs', `rotated-${stamp}.ndjson.old`));
  }
}

function metric(text, name) {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(name) && (line[name.length] === '{' || line[name.length] === ' ')) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

function rowsInEmulator() {
  let rows = 0;
  for (const ds of DATASOURCES) {
    const f = path.join(root, 'state/embedded-emulator', `${ds}.ndjson`);
    if (existsSync(f)) rows += readFileSync(f).toString().split('\n').length - 1;
  }
  return rows;
}

const started = Date.now();
const writer = setInterval(() => writeBatch(RATE_PER_SECOND / 10), 100);
const reporter = setInterval(async () => {
  if (ADMIN === null) {
    console.log(`[quickstart] written ${seq * 2} lines | rows in emulator ${rowsInEmulator()} | (admin.listen is off: no metrics)`);
    if (Date.now() - started >= seconds * 1000) stop('time is up');
    return;
  }
  try {
    const text = await (await fetch(`${ADMIN}/metrics`)).text();
    const ready = (await fetch(`${ADMIN}/readyz`)).status === 200 ? 'ready' : 'NOT READY';
    console.log(
      `[quickstart] written ${seq * 2} lines | read ${metric(text, 'spoolship_lines_read_total')} | acked ${metric(text, 'spoolship_lines_acked_total')}` +
        ` | requests ${metric(text, 'spoolship_requests_total')} | rows in emulator ${rowsInEmulator()} | ${ready}`,
    );
  } catch {
    console.log(`[quickstart] waiting for the agent at ${ADMIN}...`);
  }
  if (Date.now() - started >= seconds * 1000) stop('time is up');
}, 2000);

const chain = ancestors();
const firstParent = process.ppid;
const watcher = setInterval(() => {
  if (ancestorGone(chain, firstParent)) stop('the process that started this script (npm) is gone');
}, PARENT_CHECK_MS);

let stopping = false;
function stop(why) {
  if (stopping) return;
  stopping = true;
  clearInterval(writer);
  clearInterval(reporter);
  clearInterval(watcher);
  console.log(`[quickstart] ${why}: stopping the agent (SIGTERM: drain, persist, exit 0)...`);
  console.log(`[quickstart] rows stored by the embedded emulator: ${path.join(root, 'state/embedded-emulator')}/<datasource>.ndjson`);
  agent.kill('SIGTERM');
}
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGHUP', () => stop('SIGHUP'));
console.log(`[quickstart] writing ${RATE_PER_SECOND * 2} events/s into ${spoolDir}/{${DATASOURCES.join(',')}}; admin ${ADMIN === null ? 'off (admin.listen: "")' : `on ${ADMIN}`} (Ctrl-C to stop)`);
