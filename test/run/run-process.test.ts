// `spoolship run` as a real child process: signals, reload, the state lock.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import { appendFile, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';

const CLI = path.resolve('dist/cli.js');
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

interface Agent {
  child: ChildProcess;
  logs: Array<Record<string, unknown>>;
  exited: Promise<number | null>;
}

function startRun(dir: string, env: Record<string, string> = {}): Agent {
  const child = spawn(process.execPath, [CLI, 'run', '-c', path.join(dir, 'cfg.yaml')], { cwd: dir, env: { ...process.env, ...env } });
  const logs: Agent['logs'] = [];
  let buf = '';
  child.stderr!.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        logs.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        logs.push({ msg: line });
      }
    }
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  cleanups.push(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await exited;
  });
  return { child, logs, exited };
}

async function until<T>(fn: () => T, what: string, ms = 30_000): Promise<NonNullable<T>> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function setup(): Promise<{ dir: string; emu: Emulator; cfg: (extra?: string) => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-run-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const emu = await startEmulator({ listen: '127.0.0.1:0', dataDir: path.join(dir, 'emu'), recordRequests: true });
  cleanups.push(() => emu.close());
  await mkdir(path.join(dir, 'spool', 'ev'), { recursive: true });
  const cfg = (extra = '') =>
    writeFile(
      path.join(dir, 'cfg.yaml'),
      `api:\n  base_url: ${emu.url}\n  token: ${emu.token}\nspool:\n  dir: ./spool\nstate_dir: ./state\nbatch:\n  linger_ms: 50\nadmin:\n  listen: ""\nlog:\n  format: json\n${extra}`,
    );
  await cfg();
  return { dir, emu, cfg };
}

const rowsOf = (dir: string) => {
  const f = path.join(dir, 'emu', 'ev.ndjson');
  return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').filter(Boolean) : [];
};
const batch = (from: number, n: number) => Array.from({ length: n }, (_, i) => JSON.stringify({ n: from + i })).join('\n') + '\n';

describe('spoolship run (process)', () => {
  it('SIGHUP with a broken config logs every problem and keeps running on the old one', async () => {
    const { dir, emu, cfg } = await setup();
    await appendFile(path.join(dir, 'spool', 'ev', 'a.ndjson'), batch(0, 100));
    const a = startRun(dir);
    await until(() => rowsOf(dir).length === 100, 'first rows');
    await cfg('queue:\n  max_bytes: lots\ncompression:\n  codec: brotli\n');
    a.child.kill('SIGHUP');
    const rejected = await until(() => a.logs.find((l) => l.event === 'reload_rejected'), 'rejection log');
    expect(JSON.stringify(rejected.problems)).toMatch(/compression\.codec/);
    expect(JSON.stringify(rejected.problems)).toMatch(/queue\.max_bytes/);
    // WARN: the old config keeps shipping, no data needs an operator (docs/metrics.md "Logs": ERROR means it does).
    expect(rejected.level).toBe('warn');
    await appendFile(path.join(dir, 'spool', 'ev', 'a.ndjson'), batch(100, 100));
    await until(() => rowsOf(dir).length === 200, 'rows after the rejected reload');
    a.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    expect(new Set(rowsOf(dir)).size).toBe(200);
    expect(emu.requests().every((r) => r.contentEncoding === 'zstd')).toBe(true);
  });

  it('SIGHUP with a changed config restarts the pipeline on it, losing and duplicating nothing', async () => {
    const { dir, emu, cfg } = await setup();
    await appendFile(path.join(dir, 'spool', 'ev', 'a.ndjson'), batch(0, 300));
    const a = startRun(dir);
    await until(() => rowsOf(dir).length === 300, 'first rows');
    await cfg('compression:\n  codec: gzip\n');
    a.child.kill('SIGHUP');
    await until(() => a.logs.filter((l) => l.event === 'started').length === 2, 'the restarted pipeline');
    const before = emu.requests().length;
    await appendFile(path.join(dir, 'spool', 'ev', 'a.ndjson'), batch(300, 300));
    await until(() => rowsOf(dir).length === 600, 'rows after the reload');
    // The reload closed the old pipeline without saying the process stopped; the SIGTERM did.
    expect(a.logs.filter((l) => l.event === 'pipeline_closed_for_reload')).toHaveLength(1);
    expect(a.logs.filter((l) => l.event === 'stopped')).toHaveLength(0);
    a.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    expect(a.logs.filter((l) => l.event === 'stopped')).toHaveLength(1);
    const rows = rowsOf(dir);
    expect(rows).toHaveLength(600);
    expect(new Set(rows).size).toBe(600);
    const after = emu.requests().slice(before);
    expect(after.length).toBeGreaterThan(0);
    expect(after.every((r) => r.contentEncoding === 'gzip')).toBe(true);
  });

  it('SIGHUP with a changed config is not progress: an agent that acknowledges nothing stays not ready (no_progress)', async () => {
    const { dir, emu } = await setup();
    // Nothing answers: the emulator's port is closed.
    const baseUrl = emu.url;
    await emu.close();
    const config = (codec: string) =>
      writeFile(
        path.join(dir, 'cfg.yaml'),
        `api:\n  base_url: ${baseUrl}\n  token: t\nspool:\n  dir: ./spool\nstate_dir: ./state\nshutdown_timeout_ms: 1000\nbatch:\n  linger_ms: 300\ncompression:\n  codec: ${codec}\nadmin:\n  listen: 127.0.0.1:0\nlog:\n  format: json\n`,
      );
    await config('zstd');
    await appendFile(path.join(dir, 'spool', 'ev', 'a.ndjson'), batch(0, 10));
    const a = startRun(dir);
    const started = await until(() => a.logs.find((l) => l.event === 'started'), 'the start');
    const readyz = async () => (await (await fetch(`${String(started.admin)}/readyz`)).json()) as { ready: boolean; reasons: string[] };
    // 10 linger periods (3 s) with a backlog and no acknowledgement.
    const end = Date.now() + 30_000;
    while (!(await readyz()).reasons.includes('no_progress')) {
      if (Date.now() > end) throw new Error('timed out waiting for no_progress');
      await new Promise((r) => setTimeout(r, 50));
    }
    // Counted from the new pipeline's start, 10 linger periods again: it was ready for 3 s.
    await config('gzip');
    a.child.kill('SIGHUP');
    await until(() => a.logs.filter((l) => l.event === 'started').length === 2, 'the restarted pipeline');
    expect(await readyz()).toEqual({ ready: false, reasons: ['no_progress'] });
    a.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
  });

  it('SIGHUP with a changed config keeps a Retry-After pause under way: the new pipeline sends nothing before it has passed', async () => {
    const { dir, emu, cfg } = await setup();
    // The old pipeline's drain gives up on the paused batch after 1 s: the new one sends it.
    await cfg('shutdown_timeout_ms: 1000\n');
    await appendFile(path.join(dir, 'spool', 'ev', 'a.ndjson'), batch(0, 100));
    const a = startRun(dir);
    await until(() => rowsOf(dir).length === 100, 'first rows');
    emu.failNext(1, { kind: 'status', status: 429, retry_after: 4 });
    await appendFile(path.join(dir, 'spool', 'ev', 'a.ndjson'), batch(100, 1));
    const refused = await until(() => emu.requests().find((r) => r.outcome === 429), 'the 429');
    await cfg('shutdown_timeout_ms: 1000\ncompression:\n  codec: gzip\n');
    a.child.kill('SIGHUP');
    await until(() => a.logs.filter((l) => l.event === 'started').length === 2, 'the restarted pipeline');
    await until(() => rowsOf(dir).length === 101, 'the line after the pause');
    // Rows are stored just before their request is recorded.
    await emu.settled();
    // Every request after the 429 arrived once its 4 s had passed (the emulator's arrival times).
    const after = emu.requests().filter((r) => r.at > refused.at);
    expect(after.length).toBeGreaterThan(0);
    for (const r of after) expect(r.at - refused.at).toBeGreaterThanOrEqual(4000);
    a.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
  });

  it('SIGHUP with a changed config whose token_file cannot be read is rejected: the old pipeline keeps running and shipping', async () => {
    const { dir, emu } = await setup();
    await writeFile(path.join(dir, 'tok'), emu.token, { mode: 0o600 });
    const write = (linger: number) =>
      writeFile(path.join(dir, 'cfg.yaml'), `api:\n  base_url: ${emu.url}\n  token_file: ./tok\nspool:\n  dir: ./spool\nstate_dir: ./state\nbatch:\n  linger_ms: ${linger}\nadmin:\n  listen: ""\nlog:\n  format: json\n`);
    await write(50);
    await appendFile(path.join(dir, 'spool', 'ev', 'a.ndjson'), batch(0, 100));
    const a = startRun(dir);
    await until(() => rowsOf(dir).length === 100, 'first rows');
    // A secret being rotated: the file is away for a moment, and the config changed too.
    await rename(path.join(dir, 'tok'), path.join(dir, 'tok.new'));
    await write(60);
    a.child.kill('SIGHUP');
    const rejected = await until(() => a.logs.find((l) => l.event === 'reload_rejected'), 'the rejection');
    expect(String((rejected.problems as string[])[0])).toMatch(/^api\.token_file: ".*tok": cannot read it \(ENOENT\)/);
    expect(a.logs.filter((l) => l.event === 'reload_restarting')).toHaveLength(0);
    await rename(path.join(dir, 'tok.new'), path.join(dir, 'tok'));
    await appendFile(path.join(dir, 'spool', 'ev', 'a.ndjson'), batch(100, 100));
    await until(() => rowsOf(dir).length === 200, 'rows after the rejected reload');
    expect(a.child.exitCode).toBe(null);
    a.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
  });

  it('SIGHUP that changes log.format: the new pipeline logs in the new format from its first line', async () => {
    const { dir } = await setup();
    const a = startRun(dir);
    await until(() => a.logs.find((l) => l.event === 'started'), 'the start');
    await writeFile(path.join(dir, 'cfg.yaml'), (await readFile(path.join(dir, 'cfg.yaml'), 'utf8')).replace('format: json', 'format: pretty'));
    a.child.kill('SIGHUP');
    // pino-pretty's lines are not JSON: the started line of the new pipeline is one of them.
    await until(() => a.logs.find((l) => l.event === undefined && /started/.test(String(l.msg))), 'the new pipeline started, said in the pretty format');
    expect(a.logs.filter((l) => l.event === 'started')).toHaveLength(1);
    a.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
  });

  it('exits 2 naming state_dir when a file is where it should be, and leaves the file alone', async () => {
    const { dir } = await setup();
    await writeFile(path.join(dir, 'state'), 'not a directory');
    const a = startRun(dir);
    expect(await a.exited).toBe(2);
    expect(a.logs.map((l) => String(l.msg)).join('\n')).toMatch(/state_dir: ".*state": cannot be made a directory \(EEXIST: a file is in the way\)/);
    expect(readFileSync(path.join(dir, 'state'), 'utf8')).toBe('not a directory');
  });

  it('SIGHUP with a changed config keeps the admin address (admin.listen needs a restart): port 0 is not bound again elsewhere', async () => {
    const { dir, cfg } = await setup();
    const cfgFile = path.join(dir, 'cfg.yaml');
    const listenAny = async (extra = '') => {
      await cfg(extra);
      await writeFile(cfgFile, readFileSync(cfgFile, 'utf8').replace('listen: ""', 'listen: 127.0.0.1:0'));
    };
    await listenAny();
    await appendFile(path.join(dir, 'spool', 'ev', 'a.ndjson'), batch(0, 100));
    const a = startRun(dir);
    const first = await until(() => a.logs.find((l) => l.event === 'started'), 'the start');
    const admin = String(first.admin);
    expect(admin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await until(() => rowsOf(dir).length === 100, 'first rows');
    await listenAny('compression:\n  codec: gzip\n');
    a.child.kill('SIGHUP');
    const second = await until(() => a.logs.filter((l) => l.event === 'started')[1], 'the restarted pipeline');
    expect(second.admin).toBe(admin);
    const ready = await fetch(`${admin}/readyz`);
    expect(ready.status).toBe(200);
    // The same registry: the lines read before the reload are still counted.
    const metrics = await (await fetch(`${admin}/metrics`)).text();
    expect(metrics).toMatch(/spoolship_lines_read_total\{datasource="ev"\} 100\b/);
    a.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
  });

  it('a second run on the same state_dir exits 2 naming the process that holds it', async () => {
    const { dir } = await setup();
    const a = startRun(dir);
    await until(() => a.logs.find((l) => l.event === 'started'), 'first agent');
    const b = startRun(dir);
    expect(await b.exited).toBe(2);
    const text = b.logs.map((l) => String(l.msg)).join('\n');
    expect(text).toContain(`in use by process ${a.child.pid}`);
    a.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
  });

  it('exits 2 naming admin.listen when its port is taken, creating no state_dir, and leaves it free', async () => {
    const { dir } = await setup();
    const net = await import('node:net');
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', () => resolve()));
    cleanups.push(() => new Promise((resolve) => blocker.close(() => resolve(undefined))));
    const port = (blocker.address() as { port: number }).port;
    const cfgFile = path.join(dir, 'cfg.yaml');
    const original = readFileSync(cfgFile, 'utf8');
    await writeFile(cfgFile, original.replace('listen: ""', `listen: 127.0.0.1:${port}`));
    const a = startRun(dir);
    expect(await a.exited).toBe(2);
    const text = a.logs.map((l) => String(l.msg)).join('\n');
    expect(text).toContain(`admin.listen: "127.0.0.1:${port}": cannot listen there (EADDRINUSE`);
    // A start refused for its config creates nothing: no state_dir, no checkpoint, no journal.
    expect(existsSync(path.join(dir, 'state'))).toBe(false);
    // Nothing was left behind: with the admin endpoints off, the same state_dir starts.
    await writeFile(cfgFile, original);
    const b = startRun(dir);
    await until(() => b.logs.find((l) => l.event === 'started'), 'agent with the admin endpoints off');
    b.child.kill('SIGTERM');
    expect(await b.exited).toBe(0);
  });

  it.each([
    ['no token at all', '', 'api.token: null: no API token'],
    ['a token_file that does not exist', '  token_file: ./missing-token\n', 'api.token_file: "'],
    ['a ca_file that does not exist', '  token: t\n  ca_file: ./missing-ca.pem\n', 'api.ca_file: "'],
  ])('exits 2 with %s, naming the key, and creates no state_dir', async (_what, tokenLines, message) => {
    const { dir, emu } = await setup();
    await writeFile(
      path.join(dir, 'cfg.yaml'),
      `api:\n  base_url: ${emu.url}\n${tokenLines}spool:\n  dir: ./spool\nstate_dir: ./state\nadmin:\n  listen: ""\nlog:\n  format: json\n`,
    );
    const env = { ...process.env };
    delete env.SPOOLSHIP_TOKEN;
    const child = spawn(process.execPath, [CLI, 'run', '-c', path.join(dir, 'cfg.yaml')], { cwd: dir, env });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toContain(message);
    expect(existsSync(path.join(dir, 'state'))).toBe(false);
  });
});
