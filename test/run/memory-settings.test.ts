// The agent's memory settings (src/cli/memory.ts) come without the user
// setting anything, in the process that was started: read back from
// /proc/<pid> of the very child the test spawned (one PID, no helper child).
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const CLI = path.resolve('dist/cli.js');
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

interface Started {
  child: ChildProcess;
  logs: Array<Record<string, unknown>>;
  exited: Promise<number | null>;
}

async function start(how: 'program' | 'node', env: Record<string, string> = {}): Promise<Started> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-mem-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  await mkdir(path.join(dir, 'spool'));
  await writeFile(path.join(dir, 'cfg.yaml'), `api:\n  base_url: embedded\nspool:\n  dir: ${dir}/spool\nstate_dir: ${dir}/state\nadmin:\n  listen: ""\nlog:\n  format: json\n`);
  const args = ['run', '-c', path.join(dir, 'cfg.yaml')];
  // PATH finds `node` for the launcher; nothing else of the test's environment is passed.
  const childEnv = { PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}`, HOME: dir, ...env };
  const child = how === 'program' ? spawn(CLI, args, { cwd: dir, env: childEnv }) : spawn(process.execPath, [CLI, ...args], { cwd: dir, env: childEnv });
  const logs: Started['logs'] = [];
  let buf = '';
  let started!: () => void;
  const up = new Promise<void>((r) => (started = r));
  child.stderr!.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        const rec = JSON.parse(line) as Record<string, unknown>;
        logs.push(rec);
        if (rec.event === 'started') started();
      } catch {
        logs.push({ msg: line });
      }
    }
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  cleanups.push(async () => {
    child.kill('SIGKILL');
    await exited;
  });
  await Promise.race([up, exited.then((c) => Promise.reject(new Error(`exited with ${c}: ${JSON.stringify(logs)}`)))]);
  return { child, logs, exited };
}

function procOf(pid: number): { argv: string[]; env: Record<string, string> } {
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  const env = Object.fromEntries(
    readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  return { argv, env };
}

describe('memory settings without any environment', () => {
  it('spoolship run as a program: the started PID is node itself, with MALLOC_ARENA_MAX=1 and --max-semi-space-size=1, no other V8 flag (one made Node reject its own code cache: the WebAssembly tier is set at run time, test/util/wasm-tier.test.ts); SIGTERM stops it with 0', async () => {
    const a = await start('program');
    const p = procOf(a.child.pid!);
    expect(path.basename(p.argv[0]!)).toBe('node');
    expect(p.argv.filter((x) => x.startsWith('--'))).toEqual(['--max-semi-space-size=1']);
    expect(p.argv).toContain(CLI);
    expect(p.env.MALLOC_ARENA_MAX).toBe('1');
    expect(a.logs.some((l) => l.event === 'memory_settings')).toBe(false);
    // Only the start: nothing to warn about in an empty spool with a valid config
    // (but Node 20's end of life: test/run/node-support.test.ts).
    expect(a.logs.filter((l) => (l.level === 'warn' || l.level === 'error') && l.event !== 'node_end_of_life')).toEqual([]);
    a.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
  });

  it("a user's own values are kept", async () => {
    const a = await start('program', { MALLOC_ARENA_MAX: '4', NODE_OPTIONS: '--max-semi-space-size=8' });
    const p = procOf(a.child.pid!);
    expect(p.argv.filter((x) => x.startsWith('--max-semi-space-size'))).toEqual([]);
    expect(p.env.MALLOC_ARENA_MAX).toBe('4');
    expect(p.env.NODE_OPTIONS).toBe('--max-semi-space-size=8');
    expect(a.logs.some((l) => l.event === 'memory_settings')).toBe(false);
  });

  it('node dist/cli.js run: re-executed in place where Node can (process.execve), else said at start', async () => {
    const a = await start('node');
    const p = procOf(a.child.pid!);
    if (typeof (process as { execve?: unknown }).execve === 'function') {
      expect(p.argv.filter((x) => x.startsWith('--'))).toEqual(['--max-semi-space-size=1']);
      expect(p.env.MALLOC_ARENA_MAX).toBe('1');
      expect(a.logs.some((l) => l.event === 'memory_settings')).toBe(false);
    } else {
      expect(p.argv).not.toContain('--max-semi-space-size=1');
      expect(a.logs.find((l) => l.event === 'memory_settings')).toMatchObject({ applied: false, node: process.version });
    }
    a.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
  });
});

// libuv's pool for compression.threads (src/codec/threads.ts) is sized before
// node starts its pool: by the launcher from the CPUs, and by the
// re-execution where the config wants another size. Read back from the
// started PID's own environment and its start log.
describe('the thread pool for compression.threads', () => {
  const cpus = os.availableParallelism();
  const execve = typeof (process as { execve?: unknown }).execve === 'function';

  it('spoolship run as a program: the launcher sizes the pool from the CPUs (threads + 2, at least 4); the start log says so', async () => {
    const a = await start('program');
    const wanted = Math.max(4, cpus + 2);
    const p = procOf(a.child.pid!);
    expect(p.env.UV_THREADPOOL_SIZE).toBe(String(wanted));
    expect(a.logs.find((l) => l.event === 'started')).toMatchObject({ compression_threads: cpus, threadpool: wanted, threadpool_from: 'spoolship' });
    expect(a.logs.some((l) => l.event === 'threadpool_small')).toBe(false);
  });

  it("a user's UV_THREADPOOL_SIZE is kept, and one too small for the threads is a WARN", async () => {
    const a = await start('program', { UV_THREADPOOL_SIZE: '2' });
    expect(procOf(a.child.pid!).env.UV_THREADPOOL_SIZE).toBe('2');
    expect(a.logs.find((l) => l.event === 'started')).toMatchObject({ threadpool: 2, threadpool_from: 'user' });
    expect(a.logs.find((l) => l.event === 'threadpool_small')).toMatchObject({ level: 'warn', threadpool: 2, wanted: Math.max(4, cpus + 2) });
  });

  it('compression.threads set above the CPUs: re-executed with its pool where Node can, else a WARN naming the fix', async () => {
    const a = await start('program', { SPOOLSHIP_COMPRESSION__THREADS: '6' });
    const started = a.logs.find((l) => l.event === 'started');
    expect(started).toMatchObject({ compression_threads: 6, threads_from: 'compression.threads' });
    if (execve) {
      expect(procOf(a.child.pid!).env.UV_THREADPOOL_SIZE).toBe('8');
      expect(started).toMatchObject({ threadpool: 8, threadpool_from: 'spoolship' });
    } else {
      expect(started).toMatchObject({ threadpool: Math.max(4, cpus + 2) });
      expect(a.logs.find((l) => l.event === 'threadpool_small')).toMatchObject({ level: 'warn', wanted: 8 });
    }
  });
});
