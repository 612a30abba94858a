// The `spoolship emulator` command, spawned from the build (globalSetup
// compiles it): one JSON line on stdout, serves requests, exits 0 on SIGTERM;
// bad flags exit 2 naming the flag.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { describe, expect, it } from 'vitest';
import { onCleanup, tempDir } from './helpers.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

interface Ready {
  url: string;
  token: string;
  admin_token: string;
  org: string;
  ca_file: string | null;
  foreign_token: string;
}

async function spawnEmulator(args: string[]): Promise<{ child: ChildProcess; ready: Ready; stdoutLines: string[] }> {
  const child = spawn(process.execPath, [CLI, 'emulator', '--listen', '127.0.0.1:0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  onCleanup(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const stdoutLines: string[] = [];
  const lines = createInterface({ input: child.stdout! });
  const first = new Promise<string>((resolve, reject) => {
    lines.on('line', (line) => {
      stdoutLines.push(line);
      if (stdoutLines.length === 1) resolve(line);
    });
    child.once('exit', (code) => reject(new Error(`emulator exited with ${code} before it was ready: ${stderr}`)));
  });
  const ready = JSON.parse(await first) as Ready;
  return { child, ready, stdoutLines };
}

async function stop(child: ChildProcess): Promise<number | null> {
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const [code] = (await exited) as [number | null];
  return code;
}

describe('spoolship emulator (CLI)', () => {
  it('prints one JSON line, serves, stores rows, and exits 0 on SIGTERM', async () => {
    const dir = await tempDir();
    const faultsFile = path.join(dir, 'faults.json');
    await writeFile(faultsFile, JSON.stringify([{ kind: 'status', status: 503, every: 2 }]));
    const { child, ready, stdoutLines } = await spawnEmulator([
      '--data', path.join(dir, 'rows'),
      '--token', 'tok-a', '--token', 'tok-b',
      '--admin-token', 'adm', '--foreign-token', 'far', '--org', 'acme',
      '--rps', '50', '--max-body', '1000', '--replica-delay-ms', '10',
      '--faults', `@${faultsFile}`, '--max-connections', '10',
    ]);
    expect(Object.keys(ready)).toEqual(['url', 'token', 'admin_token', 'org', 'ca_file', 'foreign_token']);
    expect(ready).toMatchObject({ token: 'tok-a', admin_token: 'adm', org: 'acme', ca_file: null, foreign_token: 'far' });
    expect(ready.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    const post = (token: string, body: string) =>
      request(`${ready.url}/v0/events?name=cli&wait=true`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body });
    const ok = await post('tok-b', '{"x":1}\n');
    expect(ok.statusCode).toBe(200);
    expect(await ok.body.json()).toEqual({ successful_rows: 1, quarantined_rows: 0 });
    const faulted = await post('tok-a', '{"x":2}\n');
    expect(faulted.statusCode).toBe(503);
    await faulted.body.dump();
    const far = await post('far', '{}');
    expect(far.statusCode).toBe(404);
    await far.body.dump();
    const big = await post('tok-a', `{"p":"${'x'.repeat(1000)}"}`);
    expect(big.statusCode).toBe(413);
    await big.body.dump();

    expect(await stop(child)).toBe(0);
    expect(stdoutLines).toHaveLength(1);
    expect(await readFile(path.join(dir, 'rows', 'cli.ndjson'), 'utf8')).toBe('{"x":1}\n');
  });

  it('generates tokens; --tls gives an https URL and the CA file; --no-validate counts every line', async () => {
    const dir = await tempDir();
    const { child, ready } = await spawnEmulator(['--tls', '--data', dir, '--no-validate']);
    expect(ready.token).toMatch(/^emu_events_[0-9a-f]{32}$/);
    expect(ready.admin_token).toMatch(/^emu_admin_[0-9a-f]{32}$/);
    expect(ready.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(ready.ca_file).toBe(path.join(dir, '_emulator_tls', 'cert.pem'));
    const agent = new Agent({ allowH2: true, connect: { ca: await readFile(ready.ca_file!) } });
    onCleanup(() => agent.destroy());
    const res = await request(`${ready.url}/v0/events?name=t&wait=true`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ready.token}` },
      body: 'not json\n{"a":1}\n',
      dispatcher: agent,
    });
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toEqual({ successful_rows: 2, quarantined_rows: 0 });
    expect(await stop(child)).toBe(0);
  });

  it('exits 0 on SIGINT too', async () => {
    const { child } = await spawnEmulator([]);
    const exited = once(child, 'exit');
    child.kill('SIGINT');
    expect((await exited)[0]).toBe(0);
  });

  it('SIGTERM exits 0 at once while an answer waits out --latency-ms and a body is paced by --upload-bytes-per-sec', async () => {
    const { child, ready } = await spawnEmulator(['--latency-ms', '600000-700000', '--upload-bytes-per-sec', '1']);
    const post = (body: string) =>
      request(`${ready.url}/v0/events?name=cli&wait=true`, { method: 'POST', headers: { authorization: `Bearer ${ready.token}` }, body });
    const waiting = post('{"x":1}\n').catch((err: Error) => err);
    const paced = post(`${'{"x":1}\n'.repeat(100)}`).catch((err: Error) => err);
    const stats = async () => (await (await request(`${ready.url}/_emulator/stats`)).body.json()) as { bytes_in: number };
    // Both requests are in: the first body was read whole (8 bytes), the second's first bytes.
    while ((await stats()).bytes_in <= 8) await new Promise((r) => setTimeout(r, 20));
    // Pending timers would keep the process alive for ten minutes.
    expect(await stop(child)).toBe(0);
    expect(await waiting).toBeInstanceOf(Error);
    expect(await paced).toBeInstanceOf(Error);
  });

  it('--datasources and --append-token: APPEND-only tokens reach existing Data Sources only', async () => {
    const { child, ready } = await spawnEmulator(['--datasources', 'app, other', '--append-token', 'ap1', '--append-token', 'ap2']);
    const post = async (name: string, token: string) => {
      const res = await request(`${ready.url}/v0/events?name=${name}&wait=true`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: '{"x":1}\n' });
      await res.body.dump();
      return res.statusCode;
    };
    expect(await post('app', 'ap1')).toBe(200);
    expect(await post('other', 'ap2')).toBe(200);
    expect(await post('fresh', 'ap1')).toBe(403);
    expect(await post('fresh', ready.token)).toBe(200);
    expect(await post('fresh', 'ap2')).toBe(200);
    expect(await stop(child)).toBe(0);
  });

  it.each([
    [['--bogus'], /Unknown option '--bogus'/],
    [['--datasources', 'app,9lives'], /--datasources: "9lives" is not a Data Source name/],
    [['--append-token', ''], /--append-token must not be empty/],
    [['--latency-ms', 'soon'], /--latency-ms: .*"soon" is not N or MIN-MAX/],
    [['--latency-ms', '400-100'], /--latency-ms: 400-100 has MIN above MAX/],
    [['--upload-bytes-per-sec', '0'], /--upload-bytes-per-sec: "0" is not an integer >= 1/],
    [['--rps', 'abc'], /--rps: "abc" is not an integer >= 1; give e.g. --rps 100/],
    [['--max-body', '0'], /--max-body: "0" is not an integer >= 1/],
    [['--listen', 'localhost'], /--listen: .*is not HOST:PORT/],
    [['--faults', '[{"kind":"status"}]'], /--faults: faults\[0\].*needs "status"/],
    [['--faults', '{not json'], /--faults: faults are not valid JSON/],
    [['--token', ''], /--token must not be empty/],
  ])('bad flags %j exit 2 with a message naming the flag', (args, message) => {
    const r = spawnSync(process.execPath, [CLI, 'emulator', ...args], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(message);
  });

  it('--help lists every flag', () => {
    const r = spawnSync(process.execPath, [CLI, 'emulator', '--help'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    for (const flag of ['--listen', '--data', '--token', '--admin-token', '--foreign-token', '--org', '--rps', '--max-body', '--replica-delay-ms', '--tls', '--faults', '--no-validate', '--max-connections', '--latency-ms', '--upload-bytes-per-sec', '--datasources', '--append-token']) {
      expect(r.stdout).toContain(flag);
    }
  });
});
