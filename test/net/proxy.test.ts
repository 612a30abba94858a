// api.proxy end to end in-process: the Events client and the clusters client
// through a real tinyproxy (CONNECT tunnels, its log proves which requests
// went through it), Basic credentials, and "" / NO_PROXY going around it. A
// proxy that refuses (wrong password) or cannot be reached is an error
// outcome that names the proxy, never its password.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ClusterClient } from '../../src/clusters/client.js';
import { proxyRoute } from '../../src/config/proxy.js';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/index.js';
import { NetworkError } from '../../src/errors.js';
import { EventsClient, type SendOutcome } from '../../src/sender/http-client.js';
import { freePort, startTinyproxy, type TestProxy } from '../support/tinyproxy.js';

const PASSWORD = 'pr0xy-SECRET-pw';
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

async function setup(emuOpts: EmulatorOptions = {}, auth = true): Promise<{ dir: string; emu: Emulator; proxy: TestProxy }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-proxy-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const emu = await startEmulator({ listen: '127.0.0.1:0', dataDir: path.join(dir, 'emu'), ...emuOpts });
  cleanups.push(() => emu.close());
  const proxy = await startTinyproxy(dir, auth ? { user: 'agent', password: PASSWORD } : undefined);
  cleanups.push(() => proxy.close());
  return { dir, emu, proxy };
}

function client(emu: Emulator, setting: string | null, env: NodeJS.ProcessEnv = {}, http2 = false): EventsClient {
  const c = new EventsClient({
    baseUrl: emu.url,
    token: { get: () => emu.token },
    wait: true,
    http2,
    caFile: emu.caFile,
    timeoutMs: 10_000,
    maxConnections: 4,
    route: proxyRoute(setting, env, emu.url),
  });
  cleanups.push(() => c.destroy());
  return c;
}

const body = (from: number, n: number) => Buffer.from(Array.from({ length: n }, (_, i) => `{"n":${from + i}}\n`).join(''));
const stored = (emu: Emulator, dir: string) => readFile(path.join(dir, 'emu', 'ev.ndjson'), 'utf8').catch(() => '');
const target = (emu: Emulator) => new URL(emu.url).host;

function expectStatus(o: SendOutcome, status: number): void {
  expect(o.kind === 'response' ? o.status : `${o.code}: ${o.message}`).toBe(status);
}

describe('api.proxy', () => {
  it('a proxy URL with Basic credentials: every request goes through its CONNECT tunnel', async () => {
    const { dir, emu, proxy } = await setup();
    const c = client(emu, proxy.url);
    expectStatus(await c.post('ev', body(0, 3), null), 200);
    expectStatus(await c.post('ev', body(3, 2), null), 200);
    expect(proxy.connects()).toContain(target(emu));
    expect(await stored(emu, dir)).toBe(body(0, 5).toString());
  });

  it('over TLS, HTTP/2 inside the tunnel (api.http2)', async () => {
    const { emu, proxy } = await setup({ tls: true, recordRequests: true });
    const c = client(emu, proxy.url, {}, true);
    expectStatus(await c.post('ev', body(0, 1), null), 200);
    expect(proxy.connects()).toEqual([target(emu)]);
    expect(emu.requests().map((r) => r.httpVersion)).toEqual(['2']);
  });

  it('a wrong password: an error outcome naming the proxy and the refusal, without the password; nothing sent', async () => {
    const { dir, emu, proxy } = await setup();
    const c = client(emu, proxy.url.replace(PASSWORD, 'not-the-pw-123'));
    const o = await c.post('ev', body(0, 1), null);
    expect(o).toMatchObject({ kind: 'error', code: expect.stringMatching(/^PROXY_40[17]$/), timeout: false });
    const msg = (o as { message: string }).message;
    expect(msg).toContain(`agent:***@127.0.0.1:${proxy.port}`);
    expect(msg).not.toContain('not-the-pw-123');
    expect(await stored(emu, dir)).toBe('');
  });

  it('a proxy that cannot be reached: PROXY_ECONNREFUSED naming it, without the password', async () => {
    const { emu } = await setup({}, false);
    const port = await freePort();
    const o = await client(emu, `http://agent:${PASSWORD}@127.0.0.1:${port}`).post('ev', body(0, 1), null);
    expect(o).toMatchObject({ kind: 'error', code: 'PROXY_ECONNREFUSED' });
    expect((o as { message: string }).message).toContain(`agent:***@127.0.0.1:${port}`);
    expect(JSON.stringify(o)).not.toContain(PASSWORD);
  });

  it('"" never uses a proxy, even with HTTP_PROXY set', async () => {
    const { dir, emu, proxy } = await setup({}, false);
    expectStatus(await client(emu, '', { HTTP_PROXY: proxy.url, http_proxy: proxy.url }).post('ev', body(0, 2), null), 200);
    // Answered, so a request through the proxy would be in its log by now.
    expect(proxy.connects()).toEqual([]);
    expect(await stored(emu, dir)).toBe(body(0, 2).toString());
  });

  it('null: the environment\'s proxy (lower case too), and NO_PROXY goes around it', async () => {
    const { emu, proxy } = await setup({}, false);
    expectStatus(await client(emu, null, { http_proxy: proxy.url }).post('ev', body(0, 1), null), 200);
    expect(proxy.connects()).toEqual([target(emu)]);
    expectStatus(await client(emu, null, { HTTP_PROXY: proxy.url, NO_PROXY: 'localhost,127.0.0.1' }).post('ev', body(1, 1), null), 200);
    expectStatus(await client(emu, null, { HTTP_PROXY: proxy.url, no_proxy: `127.0.0.1:${new URL(emu.url).port}` }).post('ev', body(2, 1), null), 200);
    expect(proxy.connects()).toEqual([target(emu)]);
    // And without NO_PROXY, again through it.
    expectStatus(await client(emu, null, { HTTP_PROXY: proxy.url }).post('ev', body(3, 1), null), 200);
    expect(proxy.connects()).toEqual([target(emu), target(emu)]);
  });

  it('the clusters client goes through it too; a refusal is a NetworkError naming the proxy without its password', async () => {
    const { emu, proxy } = await setup();
    const ok = new ClusterClient({ baseUrl: emu.url, org: emu.org, token: emu.adminToken, route: proxyRoute(proxy.url, {}, emu.url) });
    cleanups.push(() => ok.close());
    expect((await ok.listClusters()).clusters.length).toBeGreaterThan(0);
    expect(proxy.connects()).toEqual([target(emu)]);
    const bad = new ClusterClient({ baseUrl: emu.url, org: emu.org, token: emu.adminToken, route: proxyRoute(null, { HTTP_PROXY: proxy.url.replace(PASSWORD, 'wrong-pw-456') }, emu.url) });
    cleanups.push(() => bad.close());
    const err = await bad.listClusters().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as Error).message).toMatch(/PROXY_40[17]/);
    expect((err as Error).message).not.toContain('wrong-pw-456');
  });

  it("a proxy that never answers the CONNECT: the request times out, and its socket to the proxy closes with it (undici kept it 300 s)", async () => {
    const open = new Set<Socket>();
    const server = createServer((s) => {
      open.add(s);
      // Read (and drop) what comes, so that the client's FIN is seen.
      s.resume();
      s.on('error', () => undefined);
      s.on('close', () => open.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(async () => {
      for (const s of open) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    });
    const proxyUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const c = new EventsClient({ baseUrl: 'http://api.example.invalid', token: { get: () => 't' }, wait: true, http2: false, caFile: null, timeoutMs: 300, maxConnections: 4, route: proxyRoute(proxyUrl, {}, 'http://api.example.invalid') });
    cleanups.push(() => c.destroy());
    expect(await c.post('ev', body(0, 1), null)).toMatchObject({ kind: 'error', code: 'TIMEOUT' });
    // Not cut by a destroy (the client lives on): the tunnel's own attempt ends, not at
    // undici's 4 s keep-alive of the socket it opens again for the dropped CONNECT, nor at 300 s.
    await expect.poll(() => open.size, { timeout: 3000 }).toBe(0);
  });
});
