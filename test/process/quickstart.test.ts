// `npm start` (scripts/quickstart.mjs) as a supervisor runs it: the progress
// reader follows admin.listen, a refused start ends it with the agent's exit
// code, and when npm 11 exits at once on SIGTERM (leaving its script behind)
// the script notices and stops the agent: drain, exit 0, the port released.
// Real npm, real child processes, real signals.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFile, mkdir, symlink, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { getJson, onCleanup, tempDir, waitFor } from './helpers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A copy of the quick start in its own directory: the script and config copied, dist/ and node_modules/ linked. */
async function quickstartDir(): Promise<string> {
  const dir = await tempDir('spoolship-quickstart-');
  await mkdir(path.join(dir, 'scripts'));
  await mkdir(path.join(dir, 'config'));
  await copyFile(path.join(ROOT, 'scripts/quickstart.mjs'), path.join(dir, 'scripts/quickstart.mjs'));
  await copyFile(path.join(ROOT, 'config/spoolship.yaml'), path.join(dir, 'config/spoolship.yaml'));
  await symlink(path.join(ROOT, 'dist'), path.join(dir, 'dist'));
  await symlink(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  // The project's start script without its prestart (the build): dist/ is built by the suite's global setup.
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ name: 'quickstart-copy', private: true, scripts: { start: 'node scripts/quickstart.mjs' } }));
  return dir;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface NpmStart {
  child: ChildProcess;
  output: () => string;
  exit: Promise<number | null>;
  /** Resolves when every process holding npm's stdout (npm, its shell, the script, the agent) has closed it. */
  allGone: Promise<void>;
}

function npmStart(dir: string, env: Record<string, string>): NpmStart {
  const child = spawn('npm', ['start'], { cwd: dir, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const allGone = new Promise<void>((resolve) => child.stdout!.on('close', () => resolve()));
  onCleanup(async () => {
    // A failed test must not leave an agent behind: the agent runs in npm's process group.
    if (child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });
  return { child, output: () => out, exit, allGone };
}

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.on('error', () => resolve(true));
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('npm start under a supervisor', () => {
  it('reads progress from admin.listen, and stops the agent when npm exits on SIGTERM without it', async () => {
    const dir = await quickstartDir();
    const port = await freePort();
    const admin = `http://127.0.0.1:${port}`;
    const npm = npmStart(dir, { SPOOLSHIP_ADMIN__LISTEN: `127.0.0.1:${port}` });

    await waitFor(() => npm.output().includes(`admin on ${admin}`), 'the quick start to name the overridden admin address');
    await waitFor(() => /\[quickstart\] written \d+ lines \| read \d+ \| acked [1-9]\d* .*\| ready/.test(npm.output()), 'progress read from that address', 60_000);
    const status = await getJson(`${admin}/status`);
    const agentPid = (status.body as { agent: { pid: number } }).agent.pid;
    expect(alive(agentPid)).toBe(true);

    npm.child.kill('SIGTERM');
    await npm.exit; // npm 11 exits at once; its script and the agent are still running
    await waitFor(() => npm.output().includes('is gone: stopping the agent'), 'the script to notice that npm is gone', 30_000);
    await npm.allGone;
    expect(npm.output()).toContain('spoolship exited with code 0');
    expect(npm.output()).toMatch(/"?event"?: "stopped"/);
    expect(alive(agentPid)).toBe(false);
    expect(await refused(port)).toBe(true);
  });

  it('ends with the agent\'s exit code 2 when the admin port is taken, instead of waiting forever', async () => {
    const dir = await quickstartDir();
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    onCleanup(() => new Promise((resolve) => taken.close(resolve)));
    const port = (taken.address() as net.AddressInfo).port;

    const npm = npmStart(dir, { SPOOLSHIP_ADMIN__LISTEN: `127.0.0.1:${port}` });
    expect(await npm.exit).toBe(2);
    await npm.allGone;
    expect(npm.output()).toContain('EADDRINUSE');
    expect(npm.output()).toContain('spoolship exited with code 2');
  });
});
