// TLS, HTTP/2 and the connection limit: GOAWAY (code 7) after an insert, and
// for a session beyond maxConnections; HTTP/1.1 beyond the limit gets 429.
import { readFile } from 'node:fs/promises';
import { Client, request } from 'undici';
import { describe, expect, it } from 'vitest';
import { ndjson, newAgent, onCleanup, postEvents, readStored, startEmu, tempDir } from './helpers.js';

async function h2Client(url: string, caFile: string): Promise<Client> {
  const client = new Client(url, { allowH2: true, connect: { ca: await readFile(caFile) } });
  onCleanup(() => client.destroy());
  return client;
}

function post(client: Client, emuToken: string, body: string) {
  return client.request({
    path: '/v0/events?name=events&wait=true',
    method: 'POST',
    headers: { authorization: `Bearer ${emuToken}` },
    body,
  });
}

describe('HTTP/2 over TLS', () => {
  it('serves HTTP/2 and HTTP/1.1 with a certificate for 127.0.0.1 written under dataDir', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir, tls: true });
    expect(emu.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(emu.caFile).toBe(`${dir}/_emulator_tls/cert.pem`);
    expect(await readFile(emu.caFile!, 'utf8')).toMatch(/BEGIN CERTIFICATE/);
    const client = await h2Client(emu.url, emu.caFile!);
    const res = await post(client, emu.token, ndjson(2));
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toEqual({ successful_rows: 2, quarantined_rows: 0 });
    const h1 = newAgent({ connect: { ca: await readFile(emu.caFile!) } });
    expect((await postEvents(emu, { body: ndjson(1, 2) }, h1)).status).toBe(200);
    expect(await readStored(dir, 'events')).toBe(ndjson(3));
    expect(emu.requests()).toEqual([]);
  });

  it('a bad token with a large body is answered 403 on HTTP/2 and HTTP/1.1, and each connection keeps serving', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir, tls: true });
    const big = ndjson(200_000); // ~2.5 MB: far past the flow-control window if nobody read it
    const client = await h2Client(emu.url, emu.caFile!);
    const refused = await post(client, 'not-a-token', big);
    expect(refused.statusCode).toBe(403);
    await refused.body.dump();
    const ok = await post(client, emu.token, ndjson(1));
    expect(ok.statusCode).toBe(200);
    await ok.body.dump();
    const h1 = newAgent({ connect: { ca: await readFile(emu.caFile!) } });
    expect((await postEvents(emu, { token: 'not-a-token', body: big }, h1)).status).toBe(403);
    expect((await postEvents(emu, { body: ndjson(1, 1) }, h1)).status).toBe(200);
    expect(await readStored(dir, 'events')).toBe(ndjson(2));
  });

  it('goaway fault: rows inserted, then GOAWAY code 7 ends the session unanswered', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir, tls: true, recordRequests: true, faults: [{ kind: 'goaway', every: 2 }] });
    const client = await h2Client(emu.url, emu.caFile!);
    const first = await post(client, emu.token, ndjson(1));
    expect(first.statusCode).toBe(200);
    await first.body.dump();
    await expect(post(client, emu.token, ndjson(2, 1))).rejects.toThrow(/GOAWAY.*code 7/);
    expect(await readStored(dir, 'events')).toBe(ndjson(3));
    expect(emu.stats().requests_by_status).toEqual({ '200': 1, goaway: 1 });
    expect(emu.requests().map((r) => [r.httpVersion, r.outcome])).toEqual([
      ['2', 200],
      ['2', 'goaway'],
    ]);
    // The client opens a new session and carries on.
    const third = await post(client, emu.token, ndjson(1, 3));
    expect(third.statusCode).toBe(200);
    await third.body.dump();
  });

  it('goaway fault on HTTP/1.1 inserts, then drops the connection', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir, faults: [{ kind: 'goaway' }] });
    await expect(postEvents(emu, { body: ndjson(2) }, newAgent())).rejects.toThrow(/other side closed|socket/i);
    expect(await readStored(dir, 'events')).toBe(ndjson(2));
    expect(emu.stats().requests_by_status).toEqual({ goaway: 1 });
  });

  it('reset and reset_after_insert over HTTP/2 drop the connection (no GOAWAY)', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir, tls: true, recordRequests: true });
    const client = await h2Client(emu.url, emu.caFile!);
    emu.failNext(1, { kind: 'reset' });
    emu.failNext(1, { kind: 'reset_after_insert' });
    const reset = await post(client, emu.token, ndjson(1)).then(() => null, (err: Error) => err);
    expect(reset).toBeInstanceOf(Error);
    expect(reset!.message).not.toMatch(/GOAWAY/);
    expect(await readStored(dir, 'events')).toBe('');
    await expect(post(client, emu.token, ndjson(2))).rejects.toThrow();
    expect(await readStored(dir, 'events')).toBe(ndjson(2));
    expect(emu.requests().map((r) => [r.httpVersion, r.outcome])).toEqual([
      ['2', 'reset'],
      ['2', 'reset'],
    ]);
  });

  it('an HTTP/2 session beyond maxConnections gets GOAWAY code 7', async () => {
    const emu = await startEmu({ tls: true, maxConnections: 1 });
    const first = await h2Client(emu.url, emu.caFile!);
    const ok = await post(first, emu.token, ndjson(1));
    expect(ok.statusCode).toBe(200);
    await ok.body.dump();
    const second = await h2Client(emu.url, emu.caFile!);
    await expect(post(second, emu.token, ndjson(1))).rejects.toThrow(/GOAWAY.*code 7/);
    expect(emu.stats().rows).toEqual({ events: 1 });
  });

  it('an HTTP/1.1 connection beyond maxConnections gets 429 answers, with the rate-limit headers (service-api.md: a connection limit\'s 429 carries them)', async () => {
    const emu = await startEmu({ maxConnections: 1 });
    const a = new Client(emu.url);
    const b = new Client(emu.url);
    onCleanup(() => Promise.all([a.destroy(), b.destroy()]));
    const okRes = await a.request({ path: '/_emulator/stats', method: 'GET' });
    expect(okRes.statusCode).toBe(200);
    await okRes.body.dump();
    const res = await b.request({ path: '/v0/events?name=e', method: 'POST', headers: { authorization: `Bearer ${emu.token}` }, body: '{}\n' });
    expect(res.statusCode).toBe(429);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.headers).toMatchObject({ 'x-ratelimit-limit': '1', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1' });
    expect(emu.stats().requests_by_status).toEqual({ '429': 1 });
    expect(((await res.body.json()) as { error: string }).error).toMatch(/too many connections/);
    // The first connection is still served.
    expect((await a.request({ path: '/v0/events?name=e&wait=true', method: 'POST', headers: { authorization: `Bearer ${emu.token}` }, body: '{}\n' })).statusCode).toBe(200);
  });

  it('tls without openssl fails with a clear error; without tls openssl is never needed', async () => {
    await expect(startEmu({ tls: true, opensslPath: '/nonexistent/openssl' })).rejects.toMatchObject({
      code: 'SPOOLSHIP_ERR_EMULATOR_TLS',
      message: expect.stringMatching(/openssl CLI was not found.*run the emulator without --tls/),
    });
    const plain = await startEmu({ opensslPath: '/nonexistent/openssl' });
    expect(plain.caFile).toBeNull();
    expect((await request(`${plain.url}/_emulator/stats`)).statusCode).toBe(200);
  });

  it('without dataDir the certificate goes to a temp dir that close() removes', async () => {
    const emu = await startEmu({ tls: true });
    const ca = emu.caFile!;
    expect(await readFile(ca, 'utf8')).toMatch(/BEGIN CERTIFICATE/);
    await emu.close();
    await expect(readFile(ca)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
