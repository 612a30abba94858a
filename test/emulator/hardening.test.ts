// The emulator as a long-running server: hostile or unusual requests get the
// platform's answers, never a crash, a leaked path or unbounded memory.
import { readdir, readFile, readlink } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { MAX_OPEN_ROW_FILES } from '../../src/emulator/index.js';
import { ndjson, postEvents, readStored, startEmu, tempDir } from './helpers.js';

async function putWeights(url: string, org: string, adminToken: string, body: string) {
  const list = await request(`${url}/v0/organizations/${org}/clusters`, { headers: { authorization: `Bearer ${adminToken}` } });
  const { clusters } = (await list.body.json()) as { clusters: { cluster_id: string }[] };
  const res = await request(`${url}/v0/organizations/${org}/clusters/${clusters[0]!.cluster_id}/weights`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body,
  });
  return { status: res.statusCode, text: await res.body.text() };
}

describe('cluster API bodies', () => {
  it('deeply nested JSON is a 400 with a JSON error', async () => {
    const emu = await startEmu();
    const depth = 100_000;
    for (const body of [
      `{"old_weights":${'['.repeat(depth)}${']'.repeat(depth)},"new_weights":{}}`,
      `{"old_weights":{"writer":{"a":${'{"x":'.repeat(depth)}1${'}'.repeat(depth)}}},"new_weights":{}}`,
    ]) {
      const res = await putWeights(emu.url, emu.org, emu.adminToken, body);
      expect(res.status).toBe(400);
      expect(JSON.parse(res.text)).toEqual({ error: 'request body nests deeper than 32 levels' });
    }
    // Ordinary bodies, and brackets inside strings, still reach the weights checks.
    const quoted = await putWeights(emu.url, emu.org, emu.adminToken, `{"old_weights":{"${'['.repeat(100)}":{}},"new_weights":{}}`);
    expect(JSON.parse(quoted.text).error).not.toContain('nests deeper');
  });
});

describe('Data Source names and their files', () => {
  it('a name longer than 255 characters is a 400 with a JSON error that names no path', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir });
    const res = await postEvents(emu, { name: 'a'.repeat(256) });
    expect(res.status).toBe(400);
    expect(res.json()).toEqual({ error: expect.any(String) });
    expect(res.text).not.toContain(dir);
    expect(await readdir(dir)).toEqual([]);
  });

  it('a 255-character name is stored, rows and quarantine apart', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir });
    const long = `a${'b'.repeat(254)}`;
    const res = await postEvents(emu, { name: long, body: `${ndjson(2)}not json\n` });
    expect(res.status).toBe(200);
    expect(res.json()).toEqual({ successful_rows: 2, quarantined_rows: 1 });
    const files = (await readdir(dir)).sort();
    expect(files).toHaveLength(2);
    const contents = await Promise.all(files.map((f) => readFile(path.join(dir, f), 'utf8')));
    expect(contents.sort()).toEqual([ndjson(2), 'not json\n'].sort());
  });

  it('rows of a Data Source named x_quarantine never mix with the quarantine of x', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir });
    expect((await postEvents(emu, { name: 'x', body: '{"ok":1}\nbad line\n' })).status).toBe(200);
    expect((await postEvents(emu, { name: 'x_quarantine', body: '{"own":1}\nown bad\n' })).status).toBe(200);
    expect(await readStored(dir, 'x')).toBe('{"ok":1}\n');
    expect(await readStored(dir, 'x_quarantine')).toBe('bad line\n');
    expect(await readFile(path.join(dir, 'x_quarantine.rows.ndjson'), 'utf8')).toBe('{"own":1}\n');
    expect(await readFile(path.join(dir, 'x_quarantine_quarantine.ndjson'), 'utf8')).toBe('own bad\n');
    expect(emu.stats()).toMatchObject({ rows: { x: 1, x_quarantine: 1 }, quarantined: { x: 1, x_quarantine: 1 } });
  });
});

describe('open row files', () => {
  /** Open file descriptors of this process that point into `dir` (Linux /proc). */
  async function openFilesUnder(dir: string): Promise<number> {
    const fds = await readdir('/proc/self/fd');
    const targets = await Promise.all(fds.map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')));
    return targets.filter((t) => t.startsWith(`${dir}${path.sep}`)).length;
  }

  it.runIf(process.platform === 'linux')('keeps a bounded number of row files open however many Data Sources are written', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir, rps: 100_000 });
    const names = Array.from({ length: 600 }, (_, i) => `ds_${i}`);
    for (const name of names) expect((await postEvents(emu, { name, body: `{"n":"${name}"}\nbad\n` })).status).toBe(200);
    expect(await openFilesUnder(dir)).toBeLessThanOrEqual(MAX_OPEN_ROW_FILES);
    // Evicted files reopen and keep appending in order.
    for (const name of names.slice(0, 3)) expect((await postEvents(emu, { name, body: '{"again":1}\n' })).status).toBe(200);
    expect(await readStored(dir, 'ds_0')).toBe('{"n":"ds_0"}\n{"again":1}\n');
    expect(await readStored(dir, 'ds_599_quarantine')).toBe('bad\n');
    expect((await readdir(dir)).length).toBe(1200);
  });
});

describe('authentication comes first', () => {
  /** POSTs a body that never ends; resolves with the answer given meanwhile. */
  function postUnfinished(url: string, token: string, route = '/v0/events?name=events', method = 'POST'): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = http.request(`${url}${route}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-length': '500000', 'content-type': 'application/json' },
      });
      req.on('error', reject);
      req.on('response', (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          req.destroy();
          resolve({ status: res.statusCode!, body });
        });
      });
      req.write(Buffer.alloc(64 * 1024, 0x61));
    });
  }

  it('a bad or foreign token is answered before any of the body is read', async () => {
    const emu = await startEmu({ recordRequests: true });
    const bad = await postUnfinished(emu.url, 'not-a-token');
    expect(bad.status).toBe(403);
    expect(JSON.parse(bad.body)).toEqual({ error: expect.any(String) });
    expect((await postUnfinished(emu.url, emu.foreignToken)).status).toBe(404);
    expect(emu.stats()).toMatchObject({ bytes_in: 0, requests_by_status: { '403': 1, '404': 1 } });
    expect(emu.requests().map((r) => [r.outcome, r.bodyBytes])).toEqual([
      [403, 0],
      [404, 0],
    ]);
  });

  it('the cluster API refuses a bad token before reading the body', async () => {
    const emu = await startEmu();
    const id = 'aws-eu-central-1-01'; // seeded
    expect(emu.clusters.getCluster(id)).toBeDefined();
    const res = await postUnfinished(emu.url, 'not-admin', `/v0/organizations/${emu.org}/clusters/${id}/weights`, 'PUT');
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body)).toEqual({ error: expect.any(String) });
    expect(emu.clusters.requests()).toEqual([expect.objectContaining({ method: 'PUT', status: 403, body: null })]);
  });
});

describe('connections', () => {
  it('bounds connections that never finish their request: beyond twice the platform limit they are dropped', async () => {
    const emu = await startEmu({ maxConnections: 10 });
    const { hostname, port } = new URL(emu.url);
    const net = await import('node:net');
    const sockets: import('node:net').Socket[] = [];
    let closedByServer = 0;
    for (let i = 0; i < 40; i++) {
      const s = net.connect(Number(port), hostname);
      s.on('error', () => undefined);
      s.on('close', () => closedByServer++);
      // Headers and a promise of 1,000 bytes, then 10: a request held open.
      s.write(`POST /v0/events?name=ev HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${emu.token}\r\ncontent-length: 1000\r\n\r\n{"a":1}\n`);
      sockets.push(s);
    }
    const deadline = Date.now() + 10_000;
    while (closedByServer < 20 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    for (const s of sockets) s.destroy();
    expect(closedByServer, 'connections past 2 x maxConnections (20) dropped').toBeGreaterThanOrEqual(20);
  });
});
