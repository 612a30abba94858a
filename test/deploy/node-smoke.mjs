#!/usr/bin/env node
// Process-level smoke test of the built CLI on whichever Node.js runs this
// script (.ci/run runs it with a Node 24 binary after `npm test`, which runs
// on the machine's Node and on Node 24). Node built-ins only, so it needs nothing from
// node_modules but what dist/ itself loads.
//
//   node test/deploy/node-smoke.mjs        # after `npm run build`
//
// Checks: `spoolship --version`; an emulator and `spoolship run` shipping a
// few lines; the agent's memory settings (Node >= 22.15); SIGTERM stops both
// with exit 0. Every wait is bounded.
import { spawn, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = path.join(ROOT, 'dist', 'cli.js');
const NODE = process.execPath;
const LINES = 100;
const DEADLINE_MS = 30_000;

const results = [];
const children = new Set();

async function check(name, fn) {
  try {
    await fn();
    results.push({ name, ok: true });
    console.log(`  ok  ${name}`);
  } catch (err) {
    results.push({ name, ok: false });
    console.log(`  FAIL ${name}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function assert(cond, what) {
  if (!cond) throw new Error(what);
}

function start(args, opts = {}) {
  const child = spawn(NODE, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
  children.add(child);
  const exit = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  child.once('exit', () => children.delete(child));
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d.toString('utf8')));
  return { child, exit, stderr: () => stderr };
}

/** Resolves with the first stdout line, or rejects when the process exits or the deadline passes. */
function firstLine(proc) {
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error('no output line within the deadline')), DEADLINE_MS);
    proc.child.stdout.on('data', (d) => {
      buf += d.toString('utf8');
      const nl = buf.indexOf('\n');
      if (nl !== -1) {
        clearTimeout(timer);
        resolve(buf.slice(0, nl));
      }
    });
    proc.exit.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before printing a line: ${proc.stderr().slice(-500)}`));
    });
  });
}

async function poll(fn, what) {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function stopWith(proc, signal) {
  if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill(signal);
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), DEADLINE_MS);
  const r = await proc.exit;
  clearTimeout(timer);
  return r;
}

const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-node-smoke-'));
console.log(`node-smoke on Node ${process.version} (${NODE})`);
try {
  await check('spoolship --version prints the package version', async () => {
    const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8'));
    const r = spawnSync(NODE, [CLI, '--version'], { encoding: 'utf8', timeout: DEADLINE_MS });
    assert(r.status === 0, `exit ${r.status}: ${r.stderr}`);
    assert(r.stdout.trim() === pkg.version, `printed ${JSON.stringify(r.stdout)}`);
  });

  const emu = start(['emulator', '--listen', '127.0.0.1:0', '--data', path.join(dir, 'emu')]);
  let agent = null;
  await check('the emulator starts and `spoolship run` ships every line to it', async () => {
    const { url, token } = JSON.parse(await firstLine(emu));
    const spool = path.join(dir, 'spool');
    await mkdir(path.join(spool, 'smoke'), { recursive: true });
    // JSON is YAML: no YAML library needed here.
    const config = {
      api: { base_url: url, token },
      spool: { dir: spool },
      state_dir: path.join(dir, 'state'),
      batch: { linger_ms: 50 },
      admin: { listen: '' },
      log: { level: 'info', format: 'json' },
    };
    await writeFile(path.join(dir, 'spoolship.yaml'), JSON.stringify(config, null, 2));
    agent = start(['run', '-c', path.join(dir, 'spoolship.yaml')], { cwd: dir });
    const body = Array.from({ length: LINES }, (_, i) => JSON.stringify({ id: `smoke-${i}`, node: process.version })).join('\n');
    await writeFile(path.join(spool, 'smoke', 'app.ndjson'), `${body}\n`);
    await poll(async () => {
      const res = await fetch(`${url}/_emulator/stats`).catch(() => null);
      if (!res) return false;
      const stats = await res.json();
      return (stats.rows?.smoke ?? 0) >= LINES;
    }, `${LINES} rows at the emulator`);
  });

  await check('`node dist/cli.js run` has the memory settings where Node can re-execute in place (process.execve), in the same PID', async () => {
    assert(agent, 'the agent did not start');
    if (typeof process.execve !== 'function') return;
    const cmdline = (await readFile(`/proc/${agent.child.pid}/cmdline`, 'utf8')).split('\0');
    const environ = (await readFile(`/proc/${agent.child.pid}/environ`, 'utf8')).split('\0');
    assert(cmdline.includes('--max-semi-space-size=1'), `cmdline ${cmdline.join(' ')}`);
    assert(environ.includes('MALLOC_ARENA_MAX=1'), 'MALLOC_ARENA_MAX=1 not in the environment');
  });

  await check('SIGTERM stops `spoolship run` with exit 0', async () => {
    assert(agent, 'the agent did not start');
    const r = await stopWith(agent, 'SIGTERM');
    assert(r.code === 0, `exit ${r.code} (${r.signal}): ${agent.stderr().slice(-500)}`);
  });

  await check('SIGTERM stops the emulator with exit 0', async () => {
    const r = await stopWith(emu, 'SIGTERM');
    assert(r.code === 0, `exit ${r.code} (${r.signal}): ${emu.stderr().slice(-500)}`);
  });
} finally {
  for (const c of children) c.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
}

const failed = results.filter((r) => !r.ok).length;
// Worded so CI does not take it for the test suite's "N passed, N failed" closing line.
console.log(failed === 0 ? `node-smoke on Node ${process.version}: all ${results.length} checks ok` : `node-smoke on Node ${process.version}: ${failed} of ${results.length} checks FAILED`);
process.exit(failed === 0 ? 0 : 1);
