// Routing: the stats endpoint, the cluster API seam, unknown paths, records.
import { createHash } from 'node:crypto';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { fakeClock, getJson, ndjson, postEvents, startEmu } from './helpers.js';

describe('routes', () => {
  it('GET /_emulator/stats reports statuses, rows, quarantine and bytes_in', async () => {
    const emu = await startEmu();
    const body = `${ndjson(3)}x\n`;
    await postEvents(emu, { body });
    await postEvents(emu, { name: 'other', body: ndjson(1), query: { wait: 'false' } });
    await postEvents(emu, { token: 'bad', body: 'ab' });
    const res = await getJson(`${emu.url}/_emulator/stats`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      requests_by_status: { '200': 1, '202': 1, '403': 1 },
      rows: { events: 3, other: 1 },
      quarantined: { events: 1 },
      bytes_in: Buffer.byteLength(body) + Buffer.byteLength(ndjson(1)), // the bad token's body is never read
      last_rows_at: expect.any(Number),
    });
    expect(res.body).toEqual(emu.stats());
  });

  it('last_rows_at is the clock time of the last request that stored rows', async () => {
    const clock = fakeClock();
    const emu = await startEmu({ now: clock.now });
    expect(emu.stats().last_rows_at).toBeNull();
    clock.advance(1000);
    await postEvents(emu, { body: ndjson(2) });
    expect(emu.stats().last_rows_at).toBe(clock.now());
    const stored = clock.now();
    clock.advance(500);
    await postEvents(emu, { token: 'bad', body: ndjson(1) });
    await postEvents(emu, { body: '' });
    expect(emu.stats().last_rows_at).toBe(stored);
    clock.advance(250);
    await postEvents(emu, { name: 'other', body: ndjson(1) });
    expect(emu.stats().last_rows_at).toBe(stored + 750);
  });

  it('paths under /v0/organizations/ go to the cluster API; its null answer becomes a JSON 404', async () => {
    const emu = await startEmu();
    const seen: string[] = [];
    // Stand in for the cluster API (another module) to test the routing seam alone.
    emu.clusters.handle = async (req) => {
      seen.push(`${req.method} ${req.path} ${req.query.get('q')} ${req.headers.authorization ?? ''} ${req.body.toString()}`);
      return req.path.endsWith('/ping') ? { status: 201, headers: { 'x-seen': 'yes' }, body: { pong: true } } : null;
    };
    const pong = await request(`${emu.url}/v0/organizations/o1/ping?q=1`, { method: 'PUT', body: '{"x":1}', headers: { authorization: 'Bearer t' } });
    expect(pong.statusCode).toBe(201);
    expect(pong.headers['x-seen']).toBe('yes');
    expect(await pong.body.json()).toEqual({ pong: true });
    const none = await request(`${emu.url}/v0/organizations/o1/nothing`);
    expect(none.statusCode).toBe(404);
    expect(await none.body.json()).toEqual({ error: 'no route for GET /v0/organizations/o1/nothing' });
    expect(seen).toEqual(['PUT /v0/organizations/o1/ping 1 Bearer t {"x":1}', 'GET /v0/organizations/o1/nothing null  ']);
    expect(emu.stats().requests_by_status).toEqual({}); // cluster calls are not Events requests
  });

  it('the foreign token is 404 on the cluster API too (another region), any other wrong token 403', async () => {
    const emu = await startEmu();
    const ask = async (path: string, token: string, how: 'bearer' | 'query' = 'bearer') => {
      const url = `${emu.url}${path}${how === 'query' ? `?token=${token}` : ''}`;
      const res = await request(url, { headers: how === 'bearer' ? { authorization: `Bearer ${token}` } : {} });
      await res.body.dump();
      return res.statusCode;
    };
    const list = `/v0/organizations/${emu.org}/clusters`;
    const config = `/v0/organizations/${emu.org}/clusters-configuration`;
    expect(await ask(list, emu.foreignToken)).toBe(404);
    expect(await ask(config, emu.foreignToken, 'query')).toBe(404);
    expect(await ask(list, 'wrong')).toBe(403);
    expect(await ask(list, emu.adminToken)).toBe(200);
  });

  it('unknown paths are 404 with a JSON error', async () => {
    const emu = await startEmu();
    const res = await getJson(`${emu.url}/v1/nothing`);
    expect(res).toEqual({ status: 404, body: { error: 'no route for GET /v1/nothing' } });
    expect((await getJson(`${emu.url}/v0/events/`)).status).toBe(404);
  });

  it('recordRequests keeps one record per Events request', async () => {
    const clock = fakeClock(5000);
    const emu = await startEmu({ recordRequests: true, now: clock.now });
    await postEvents(emu, { body: ndjson(2), headers: { 'content-encoding': 'identity' } });
    clock.advance(10);
    await postEvents(emu, { name: null });
    expect(emu.requests()).toEqual([
      {
        at: 5000,
        name: 'events',
        wait: 'true',
        authorization: `Bearer ${emu.token}`,
        contentEncoding: 'identity',
        bodyBytes: Buffer.byteLength(ndjson(2)),
        decodedBytes: Buffer.byteLength(ndjson(2)),
        // identity: the body as received is the body decoded.
        bodySha1: createHash('sha1').update(ndjson(2)).digest('hex'),
        decodedSha1: createHash('sha1').update(ndjson(2)).digest('hex'),
        outcome: 200,
        httpVersion: '1.1',
      },
      expect.objectContaining({ at: 5010, name: null, outcome: 400, decodedBytes: null }),
    ]);
  });

  it('exposes its tokens, org and url; close() is idempotent', async () => {
    const emu = await startEmu({ tokens: ['t1', 't2'], adminToken: 'adm', org: 'acme' });
    expect(emu).toMatchObject({ token: 't1', tokens: ['t1', 't2'], adminToken: 'adm', org: 'acme', caFile: null });
    expect(emu.foreignToken).toMatch(/^emu_foreign_[0-9a-f]{32}$/);
    expect(emu.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await postEvents(emu, { token: 't2' })).status).toBe(200);
    await Promise.all([emu.close(), emu.close()]);
    await expect(postEvents(emu)).rejects.toThrow();
  });
});
