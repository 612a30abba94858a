// api.proxy through the real CLI, for every command that talks to the
// platform: `run` with HTTPS_PROXY from the environment (TLS to the API
// inside the tunnel), `send` and `dead-letter replay` with api.proxy and
// Basic credentials, `clusters` with HTTP_PROXY. tinyproxy's log of CONNECT
// requests proves which command went through it.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startTinyproxy } from '../support/tinyproxy.js';
import { checkDelivery, lines, onCleanup, spawnAgent, startEmu, tempDir, waitForDelivery, writeConfig } from './helpers.js';

const PASSWORD = 'pr0xy-pw-SECRET-9';
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

describe('api.proxy (process)', () => {
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
