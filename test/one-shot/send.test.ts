import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { waitFor } from '../pipeline/helpers.js';

const CLI = path.resolve('dist/cli.js');
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

async function setup(extra: { appendTokens?: string[]; datasources?: string[] } = {}): Promise<{ dir: string; emu: Emulator }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-send-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const emu = await startEmulator({ listen: '127.0.0.1:0', dataDir: path.join(dir, 'emu'), recordRequests: true, ...extra });
  cleanups.push(() => emu.close());
  await writeFile(
    path.join(dir, 'cfg.yaml'),
    `api:\n  base_url: ${emu.url}\n  token: ${emu.token}\nstate_dir: ${dir}/state\nbatch:\n  max_bytes: 20000\nretry:\n  initial_ms: 5\n  max_ms: 20\nlog:\n  format: json\n`,
  );
  return { dir, emu };
}

function run(args: string[], opts: { cwd: string; stdin?: string; env?: Record<string, string> }): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: opts.cwd, env: { ...process.env, ...opts.env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.stdin.end(opts.stdin ?? '');
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const lines = (n: number, prefix = 'l') => Array.from({ length: n }, (_, i) => JSON.stringify({ id: `${prefix}${i}` }));
const stored = (dir: string, ds: string) => readFileSync(path.join(dir, 'emu', `${ds}.ndjson`), 'utf8').trim().split('\n');

/** `send --json a.ndjson` (3 lines, written here) with `dir`'s cfg.yaml, in the background: the child, what it printed so far, its exit code. */
async function sendInBackground(dir: string) {
  await writeFile(path.join(dir, 'a.ndjson'), `${lines(3).join('\n')}\n`);
  const child = spawn(process.execPath, [CLI, 'send', '-c', 'cfg.yaml', '-d', 'events', '--json', 'a.ndjson'], { cwd: dir });
  cleanups.push(async () => child.kill('SIGKILL'));
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (d) => (out.stdout += d));
  child.stderr.on('data', (d) => (out.stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, out, exited };
}

describe('spoolship send', () => {
  it('ships files through retries; rejected lines are dead-lettered and make it exit 1, with a JSON summary', async () => {
    const { dir, emu } = await setup();
    emu.setFaults([{ kind: 'status', status: 503, every: 3 }, { kind: 'reject_marker', marker: 'POISON' }]);
    const a = lines(3000, 'a');
    const b = [...lines(1000, 'b'), '{"id":"POISON"}'];
    await writeFile(path.join(dir, 'a.ndjson'), `${a.join('\n')}\n`);
    await writeFile(path.join(dir, 'b.ndjson'), `${b.join('\n')}\n`);
    const r = await run(['send', '-c', 'cfg.yaml', '-d', 'events', '--json', 'a.ndjson', 'b.ndjson'], { cwd: dir });
    expect(r.code).toBe(1);
    const s = JSON.parse(r.stdout);
    expect(s).toMatchObject({ datasource: 'events', ok: false, lines_read: 4001, lines_acked: 4000, lines_dead_lettered: { rejected: 1 } });
    expect(s.requests['503']).toBeGreaterThan(0);
    expect(new Set(stored(dir, 'events'))).toEqual(new Set([...a, ...lines(1000, 'b')]));
    expect(stored(dir, 'events')).toHaveLength(4000);
    const dl = readFileSync(path.join(dir, 'state', 'dead-letter', 'events.ndjson'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(dl).toEqual([expect.objectContaining({ datasource: 'events', reason: 'rejected', status: 400, line: '{"id":"POISON"}' })]);
    // FILE:OFFSET of the rejected line: the named file, and the byte where the line starts.
    expect(dl[0]).toMatchObject({ file: path.join(dir, 'b.ndjson'), offset: Buffer.byteLength(`${lines(1000, 'b').join('\n')}\n`) });
  });

  it('bad lines in both halves of a batch are dead-lettered; send does not blame the Data Source name', async () => {
    const { dir, emu } = await setup();
    emu.setFaults([{ kind: 'reject_marker', marker: 'POISON' }]);
    const good = lines(200, 'g');
    const input = [...good.slice(0, 20), '{"id":"POISON-1"}', ...good.slice(20, 180), '{"id":"POISON-2"}', ...good.slice(180)];
    await writeFile(path.join(dir, 'two.ndjson'), `${input.join('\n')}\n`);
    const r = await run(['send', '-c', 'cfg.yaml', '-d', 'events', '--json', 'two.ndjson'], { cwd: dir });
    expect(r.code).toBe(1);
    const s = JSON.parse(r.stdout);
    expect(s).toMatchObject({ lines_read: 202, lines_acked: 200, lines_dead_lettered: { rejected: 2 } });
    expect(String(s.error)).not.toMatch(/Data Source name/);
    expect(new Set(stored(dir, 'events'))).toEqual(new Set(good));
  });

  it('counts rows the platform quarantined in its summary (rows_quarantined)', async () => {
    const { dir } = await setup();
    await writeFile(path.join(dir, 'q.ndjson'), '{"a":1}\nnot json\n{"a":2}\n');
    const r = await run(['send', '-c', 'cfg.yaml', '-d', 'events', '--json', 'q.ndjson'], { cwd: dir });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, lines_acked: 3, rows_quarantined: 1 });
  });

  it('reads stdin (no FILE or "-"), sends a final line without newline whole, and exits 0 when all is acknowledged', async () => {
    const { dir } = await setup();
    const input = lines(500, 's');
    const r = await run(['send', '-c', 'cfg.yaml', '-d', 'from_stdin'], { cwd: dir, stdin: input.join('\r\n') });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/send done: from_stdin/);
    expect(r.stderr).toMatch(/acknowledged 500/);
    expect(stored(dir, 'from_stdin')).toEqual(input);
  });

  it('a line the batcher refuses is named as a rejected one: from stdin no file nor offset, from a FILE its absolute path', async () => {
    const { dir } = await setup();
    const env = { SPOOLSHIP_VALIDATE: 'json' };
    const fromStdin = await run(['send', '-c', 'cfg.yaml', '-d', 'events', '-'], { cwd: dir, stdin: `${lines(2).join('\n')}\nnot json\n`, env });
    expect(fromStdin.code).toBe(1);
    await writeFile(path.join(dir, 'rel.ndjson'), `${lines(2).join('\n')}\nnot json either\n`);
    const fromFile = await run(['send', '-c', 'cfg.yaml', '-d', 'events', 'rel.ndjson'], { cwd: dir, env });
    expect(fromFile.code).toBe(1);
    const dl = readFileSync(path.join(dir, 'state', 'dead-letter', 'events.ndjson'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(dl.map((r) => ({ reason: r.reason, file: r.file, offset: r.offset }))).toEqual([
      { reason: 'invalid_json', file: null, offset: null },
      { reason: 'invalid_json', file: path.join(dir, 'rel.ndjson'), offset: Buffer.byteLength(`${lines(2).join('\n')}\n`) },
    ]);
  });

  it('an append-only token and a Data Source that does not exist: the message says so, not only "rejected the token"', async () => {
    const { dir } = await setup({ appendTokens: ['append-only-token-1'], datasources: [] });
    await writeFile(path.join(dir, 'a.ndjson'), `${lines(10).join('\n')}\n`);
    const r = await run(['send', '-c', 'cfg.yaml', '-d', 'not_there', '--json', 'a.ndjson'], { cwd: dir, env: { SPOOLSHIP_API__TOKEN: 'append-only-token-1' } });
    expect(r.code, r.stdout + r.stderr).toBe(1);
    const error = JSON.parse(r.stdout).error as string;
    expect(error).toMatch(/HTTP 403/);
    expect(error).toMatch(/"not_there"/);
    expect(error).toMatch(/DATASOURCE:CREATE/);
  });

  it('stops at once on a rejected token (exit 1, one request), and on a foreign-region token (404)', async () => {
    const { dir, emu } = await setup();
    await writeFile(path.join(dir, 'a.ndjson'), `${lines(20_000).join('\n')}\n`);
    const bad = await run(['send', '-c', 'cfg.yaml', '-d', 'events', '--json', 'a.ndjson'], { cwd: dir, env: { SPOOLSHIP_API__TOKEN: 'nope' } });
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout).error).toMatch(/rejected the token/);
    expect(emu.stats().requests_by_status['403']).toBeLessThanOrEqual(8); // the requests already in flight, nothing retried
    const foreign = await run(['send', '-c', 'cfg.yaml', '-d', 'events', '--json', 'a.ndjson'], { cwd: dir, env: { SPOOLSHIP_API__TOKEN: emu.foreignToken } });
    expect(foreign.code).toBe(1);
    expect(JSON.parse(foreign.stdout).error).toMatch(/404/);
    expect(emu.stats().rows).toEqual({});
  });

  it.each([
    ['a redirect', 301, { location: 'https://elsewhere.example/v0/events' }, /HTTP 301 to https:\/\/elsewhere\.example\/v0\/events \(not followed\)/],
    ['another 4xx', 405, {}, /HTTP 405/],
    ['an HTML page', 200, { 'content-type': 'text/html' }, /HTTP 200 with a body that is not the Events API's/],
  ])('stops at once on %s (exit 1), naming the answer, not another region', async (_what, status, headers, message) => {
    const { dir } = await setup();
    const http = await import('node:http');
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(status, headers);
        res.end(status === 200 ? '<html><body>Welcome</body></html>' : '');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    cleanups.push(() => new Promise((r) => server.close(() => r(undefined))));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    await writeFile(path.join(dir, 'a.ndjson'), `${lines(100).join('\n')}\n`);
    const r = await run(['send', '-c', 'cfg.yaml', '-d', 'events', '--json', 'a.ndjson'], { cwd: dir, env: { SPOOLSHIP_API__BASE_URL: url } });
    expect(r.code).toBe(1);
    const error = JSON.parse(r.stdout).error as string;
    expect(error).toMatch(message);
    expect(error).toContain('check api.base_url');
    expect(error).not.toMatch(/404|another region/);
  });

  it.each(['SIGINT', 'SIGTERM'] as const)('an API that cannot be reached: the progress line says why it retries; %s stops it with the summary and exit 1', async (signal) => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-send-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    // A port nothing listens on.
    const { createServer } = await import('node:net');
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
    const port = (probe.address() as { port: number }).port;
    await new Promise((r) => probe.close(r));
    await writeFile(path.join(dir, 'cfg.yaml'), `api:\n  base_url: http://127.0.0.1:${port}\n  token: t\nstate_dir: ${dir}/state\nretry:\n  initial_ms: 5\n  max_ms: 20\n`);
    const { child, out, exited } = await sendInBackground(dir);
    await waitFor(() => /retrying \(network: ECONNREFUSED[^)]*127\.0\.0\.1:\d+; Ctrl-C stops\)/.test(out.stderr), 'the progress line saying why it retries');
    child.kill(signal);
    expect(await exited).toBe(1);
    expect(JSON.parse(out.stdout)).toMatchObject({ ok: false, lines_read: 3, lines_acked: 0, error: expect.stringContaining('interrupted') });
  });

  it('SIGTERM while a request hangs: the request is cut shutdown_timeout_ms later (not at api.timeout_ms), the summary, exit 1', async () => {
    const { dir, emu } = await setup();
    emu.setFaults([{ kind: 'hang', p: 1 }]);
    await writeFile(path.join(dir, 'cfg.yaml'), `api:\n  base_url: ${emu.url}\n  token: ${emu.token}\n  timeout_ms: 600000\nstate_dir: ${dir}/state\nshutdown_timeout_ms: 200\n`);
    const { child, out, exited } = await sendInBackground(dir);
    await waitFor(() => emu.requests().length > 0, 'the request hanging');
    child.kill('SIGTERM');
    expect(await exited).toBe(1);
    expect(JSON.parse(out.stdout)).toMatchObject({ ok: false, lines_read: 3, lines_acked: 0, error: expect.stringContaining('interrupted') });
  });

  it('SIGTERM once every line is read and sent: the answers come within shutdown_timeout_ms, every line is acknowledged, exit 0', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-send-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    let arrived!: () => void;
    const arrival = new Promise<void>((resolve) => (arrived = resolve));
    const emu = await startEmulator({ listen: '127.0.0.1:0', dataDir: path.join(dir, 'emu'), faults: [{ kind: 'slow', delay_ms: 1000 }], onEventsArrival: () => arrived() });
    cleanups.push(() => emu.close());
    await writeFile(path.join(dir, 'cfg.yaml'), `api:\n  base_url: ${emu.url}\n  token: ${emu.token}\nstate_dir: ${dir}/state\nshutdown_timeout_ms: 30000\n`);
    const { child, out, exited } = await sendInBackground(dir);
    // The one request (every line: the file was read to its end) is on the wire, its answer 1 s away.
    await arrival;
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(JSON.parse(out.stdout)).toMatchObject({ ok: true, lines_read: 3, lines_acked: 3, error: null });
  });

  it('exits 2 and sends nothing for a missing file, a missing -d or a bad Data Source name', async () => {
    const { dir, emu } = await setup();
    for (const args of [['send', '-c', 'cfg.yaml', '-d', 'events', 'nope.ndjson'], ['send', '-c', 'cfg.yaml'], ['send', '-c', 'cfg.yaml', '-d', '9bad']]) {
      const r = await run(args, { cwd: dir });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/spoolship send: /);
    }
    expect(emu.requests()).toEqual([]);
    // Each says what is wrong with the path.
    await mkdir(path.join(dir, 'adir'));
    expect((await run(['send', '-c', 'cfg.yaml', '-d', 'events', 'adir'], { cwd: dir })).stderr).toContain('cannot read adir: it is a directory (give NDJSON files, or - for stdin)');
    expect((await run(['send', '-c', 'cfg.yaml', '-d', 'events', 'nope.ndjson'], { cwd: dir })).stderr).toContain('cannot read nope.ndjson: no such file');
  });
});

describe('a full dead-letter store', () => {
  it('lines it cannot keep are counted as lost (lines_lost), exit 1, one ERROR dead_letter_full for the stretch', async () => {
    const { dir } = await setup();
    const bad = Array.from({ length: 30 }, (_, i) => `not json ${i} ${'x'.repeat(60)}`);
    const r = await run(['send', '-c', 'cfg.yaml', '-d', 'events', '--json', '-'], { cwd: dir, stdin: `${bad.join('\n')}\n`, env: { SPOOLSHIP_VALIDATE: 'json', SPOOLSHIP_DEAD_LETTER__MAX_BYTES: '2KB' } });
    expect(r.code).toBe(1);
    const s = JSON.parse(r.stdout) as { ok: boolean; lines_dead_lettered: { invalid_json: number }; lines_lost: number };
    expect(s.ok).toBe(false);
    expect(s.lines_lost).toBeGreaterThan(0);
    const kept = readFileSync(path.join(dir, 'state', 'dead-letter', 'events.ndjson'), 'utf8').trim().split('\n');
    expect(s.lines_dead_lettered.invalid_json).toBe(kept.length);
    expect(kept.length + s.lines_lost).toBe(30);
    const full = r.stderr.split('\n').filter((l) => l.includes('"dead_letter_full"'));
    expect(full).toHaveLength(1);
  });
});

describe('Data Source names up to 255 characters (SPEC section 2)', () => {
  it('a 255-character name dead-letters into a file the file system takes, and dead-letter list and purge find it; 256 characters is exit 2', async () => {
    const { dir, emu } = await setup();
    const long = `d${'x'.repeat(254)}`;
    const env = { SPOOLSHIP_VALIDATE: 'json' };
    const r = await run(['send', '-c', 'cfg.yaml', '-d', long, '-'], { cwd: dir, stdin: `${lines(3).join('\n')}\nnot json\n`, env });
    // One line dead-lettered: exit 1, the summary, no stack trace (it was ENAMETOOLONG).
    expect({ code: r.code, trace: /ENAMETOOLONG|\n\s+at /.test(r.stderr) }).toEqual({ code: 1, trace: false });
    expect(emu.stats().rows[long]).toBe(3);
    const list = await run(['dead-letter', 'list', '-c', 'cfg.yaml', '--json'], { cwd: dir });
    expect(list.code).toBe(0);
    expect(list.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { datasource: string; reason: string }))).toEqual([expect.objectContaining({ datasource: long, reason: 'invalid_json' })]);
    const only = await run(['dead-letter', 'list', '-c', 'cfg.yaml', '--json', '--datasource', long], { cwd: dir });
    expect(only.stdout.trim().split('\n')).toHaveLength(1);
    const purge = await run(['dead-letter', 'purge', '-c', 'cfg.yaml', '--yes', '--datasource', long], { cwd: dir });
    expect(purge.code).toBe(0);
    expect((await run(['dead-letter', 'list', '-c', 'cfg.yaml', '--json'], { cwd: dir })).stdout.trim()).toBe('');
    const tooLong = await run(['send', '-c', 'cfg.yaml', '-d', `${long}y`, '-'], { cwd: dir, stdin: `${lines(1).join('\n')}\n` });
    expect(tooLong.code).toBe(2);
    expect(tooLong.stderr).toContain('at most 255 characters');
  });
});
