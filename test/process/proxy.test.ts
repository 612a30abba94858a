// api.proxy through the real CLI, for every command that talks to the
// platform: `run` with HTTPS_PROXY from the environment (TLS to the API
// inside the tunnel), `send` and `dead-letter replay` with api.proxy and
// Basic credentials, `clusters` with HTTP_PROXY. tinyproxy's log of CONNECT
// requests proves which command went through it.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startTinyproxy } from '../support/tinyproxy.js';
import { checkDelivery, lines, onCleanup, spawnAgent, startEmu, tempDir, waitFor, waitForDelivery, writeConfig } from './helpers.js';

const PASSWORD = 'pr0xy-pw-SECRET-9';
const SHUTDOWN_TIMEOUT_MS = 3000;
const CLI = path.join(path.dirname(new URL(import.meta.url).pathname), '..', '..', 'dist', 'cli.js');

function cli(args: string[], cwd: string, env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A proxy that accepts connections and never answers (a black hole behind a firewall's accept). */
async function silentProxy(): Promise<{ url: string; accepted: () => number }> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createServer((s) => {
    accepted++;
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onCleanup(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, accepted: () => accepted };
}

describe('api.proxy (process)', () => {
  it('run: a proxy that never answers the CONNECT is a timeout after api.timeout_ms, retried and logged (undici waited 300 s without a word)', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const proxy = await silentProxy();
    const cfg = await writeConfig(dir, t, { api: { proxy: proxy.url, timeout_ms: 1000 } });
    mkdirSync(path.join(cfg.spoolDir, 'ev'), { recursive: true });
    writeFileSync(path.join(cfg.spoolDir, 'ev', 'a.ndjson'), lines('x', 0, 20));
    const p = spawnAgent(cfg.configFile);
    await p.started;
    const warn = (await waitFor(async () => p.logs.find((l) => l.event === 'retrying'), 'the retry WARN'))!;
    expect(warn).toMatchObject({ reason: 'timeout' });
    expect(String(warn.cause)).toContain('api.timeout_ms');
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
  });

  it('run: SIGTERM while a CONNECT hangs exits 0 within shutdown_timeout_ms, whatever api.timeout_ms is', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const proxy = await silentProxy();
    const cfg = await writeConfig(dir, t, { api: { proxy: proxy.url, timeout_ms: 120_000 }, shutdown_timeout_ms: SHUTDOWN_TIMEOUT_MS });
    mkdirSync(path.join(cfg.spoolDir, 'ev'), { recursive: true });
    writeFileSync(path.join(cfg.spoolDir, 'ev', 'a.ndjson'), lines('x', 0, 20));
    const p = spawnAgent(cfg.configFile);
    await p.started;
    await waitFor(async () => proxy.accepted() > 0, 'the CONNECT under way');
    const at = Date.now();
    p.child.kill('SIGTERM');
    const exit = await p.exited;
    expect(exit.code).toBe(0);
    expect(exit.at - at).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
    expect(p.logs.filter((l) => l.event === 'stopped')).toHaveLength(1);
    // Every part ended (the connections were cut), none left hanging past the deadline.
    expect(p.logs.filter((l) => l.event === 'stop_step_failed')).toEqual([]);
  });

  it('run: HTTPS_PROXY from the environment carries every request, TLS to the API inside the tunnel', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir, { tls: true });
    const proxy = await startTinyproxy(dir, { user: 'agent', password: PASSWORD });
    onCleanup(() => proxy.close());
    const cfg = await writeConfig(dir, t, { api: { ca_file: t.emu.caFile } });
    mkdirSync(path.join(cfg.spoolDir, 'ev'), { recursive: true });
    writeFileSync(path.join(cfg.spoolDir, 'ev', 'a.ndjson'), lines('x', 0, 50));
    const p = spawnAgent(cfg.configFile, { HTTPS_PROXY: proxy.url });
    await p.started;
    await waitForDelivery(t, 'ev', 'x', 50, 'every line delivered');
    expect(proxy.connects()).toContain(new URL(t.emu.url).host);
    expect(p.logs.find((l) => l.event === 'proxy')).toMatchObject({ from: 'HTTPS_PROXY', proxy: `http://agent:***@127.0.0.1:${proxy.port}` });
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
    expect(p.stderr).not.toContain(PASSWORD);
  });

  it('send and dead-letter replay: api.proxy with credentials', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const proxy = await startTinyproxy(dir, { user: 'agent', password: PASSWORD });
    onCleanup(() => proxy.close());
    const cfg = await writeConfig(dir, t, { api: { proxy: proxy.url } });
    const input = path.join(dir, 'in.ndjson');
    writeFileSync(input, lines('s', 0, 30));
    // Every line answered 422 (a materialized view failed): dead-lettered by send.
    t.emu.setFaults([{ kind: 'status', status: 422, p: 1 }]);
    const sent = await cli(['send', '-c', cfg.configFile, '-d', 'ev', input], dir);
    expect(sent.code, sent.stderr).toBe(1);
    const afterSend = proxy.connects().length;
    expect(afterSend).toBeGreaterThan(0);
    t.emu.setFaults([]);
    const replayed = await cli(['dead-letter', 'replay', '-c', cfg.configFile], dir);
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(proxy.connects().length).toBeGreaterThan(afterSend);
    const c = await checkDelivery(t, 'ev', 's', 30);
    expect({ missing: c.missing, duplicates: c.duplicates }).toEqual({ missing: 0, duplicates: 0 });
    for (const out of [sent.stdout, sent.stderr, replayed.stdout, replayed.stderr]) expect(out).not.toContain(PASSWORD);
  });

  it('clusters: HTTP_PROXY from the environment; a wrong password fails naming the proxy, without it', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const proxy = await startTinyproxy(dir, { user: 'agent', password: PASSWORD });
    onCleanup(() => proxy.close());
    const args = ['clusters', 'list', '--org', t.emu.org, '--token', t.emu.adminToken, '--base-url', t.emu.url, '--json'];
    const ok = await cli(args, dir, { HTTP_PROXY: proxy.url });
    expect(ok.code, ok.stderr).toBe(0);
    expect(proxy.connects()).toEqual([new URL(t.emu.url).host]);
    const bad = await cli(args, dir, { http_proxy: proxy.url.replace(PASSWORD, 'nope-wrong-pw') });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/PROXY_40[17]/);
    expect(bad.stderr).toContain(`agent:***@127.0.0.1:${proxy.port}`);
    expect(bad.stderr).not.toContain('nope-wrong-pw');
  });
});
