#!/usr/bin/env node
// `npm start`: the whole pipeline with no account. Runs `spoolship run` on
// config/spoolship.yaml (api.base_url: embedded), writes sample events into
// ./spool/<datasource>/*.ndjson (rotating a file now and then, as logrotate
// would), and prints progress read from the agent's /metrics.
//
//   npm start                 # until Ctrl-C
//   npm start -- --seconds 20 # stop by itself after 20 s
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, renameSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const secondsArg = args.indexOf('--seconds');
const seconds = secondsArg >= 0 ? Number(args[secondsArg + 1]) : Infinity;
const RATE_PER_SECOND = 500;
const DATASOURCES = ['web_events', 'app_logs'];
const ROTATE_EVERY_MS = 10_000;
const ADMIN = 'http://127.0.0.1:9464';

const spoolDir = path.join(root, 'spool');
for (const ds of DATASOURCES) mkdirSync(path.join(spoolDir, ds), { recursive: true });

const agent = spawn(process.execPath, [path.join(root, 'dist/cli.js'), 'run', '-c', path.join(root, 'config/spoolship.yaml')], {
  cwd: root,
  stdio: ['ignore', 'inherit', 'inherit'],
});
agent.on('exit', (code) => {
  console.log(`\nspoolship exited with code ${code}`);
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
  try {
    const text = await (await fetch(`${ADMIN}/metrics`)).text();
    const ready = (await fetch(`${ADMIN}/readyz`)).status === 200 ? 'ready' : 'NOT READY';
    console.log(
      `[quickstart] written ${seq * 2} lines | read ${metric(text, 'spoolship_lines_read_total')} | acked ${metric(text, 'spoolship_lines_acked_total')}` +
        ` | requests ${metric(text, 'spoolship_requests_total')} | rows in emulator ${rowsInEmulator()} | ${ready}`,
    );
  } catch {
    console.log('[quickstart] waiting for the agent...');
  }
  if (Date.now() - started >= seconds * 1000) stop();
}, 2000);

let stopping = false;
function stop() {
  if (stopping) return;
  stopping = true;
  clearInterval(writer);
  clearInterval(reporter);
  console.log('[quickstart] stopping the agent (SIGTERM: drain, persist, exit 0)...');
  console.log(`[quickstart] rows stored by the embedded emulator: ${path.join(root, 'state/embedded-emulator')}/<datasource>.ndjson`);
  agent.kill('SIGTERM');
}
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
console.log(`[quickstart] writing ${RATE_PER_SECOND * 2} events/s into ${spoolDir}/{${DATASOURCES.join(',')}}; admin on ${ADMIN} (Ctrl-C to stop)`);
