// Every row of the platform's POST /v0/events status table (docs/emulator.md,
// "Events API behaviour"; HTTP/1.1 here;
// GOAWAY rows in http2.test.ts), each asserting status, headers and body.
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { fakeClock, ndjson, postEvents, readStored, startEmu, tempDir } from './helpers.js';

describe('POST /v0/events status table', () => {
  it('200 with wait=true: rows inserted and counted in the body', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir });
    const res = await postEvents(emu, { body: ndjson(3) });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.json()).toEqual({ successful_rows: 3, quarantined_rows: 0 });
    expect(await readStored(dir, 'events')).toBe(ndjson(3));
  });

  it('202 without wait: processed, body still reports the rows', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir });
    const res = await postEvents(emu, { body: ndjson(2), query: { wait: 'false' } });
    expect(res.status).toBe(202);
    expect(res.json()).toEqual({ successful_rows: 2, quarantined_rows: 0 });
    expect(await readStored(dir, 'events')).toBe(ndjson(2));
  });

  it('400 when name is missing, nothing inserted', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir });
    const res = await postEvents(emu, { name: null });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('application/json');
    expect((res.json() as { error: string }).error).toMatch(/"name" parameter is missing/);
    expect(emu.stats().rows).toEqual({});
  });

  it.each(['1abc', 'a-b', 'a b', 'ñ'])('400 for the invalid name %j', async (name) => {
    const emu = await startEmu();
    const res = await postEvents(emu, { name });
    expect(res.status).toBe(400);
    expect((res.json() as { error: string }).error).toMatch(/invalid Data Source name/);
  });

  it('400 for an undecodable gzip body and for an unknown encoding', async () => {
    const emu = await startEmu();
    const bad = await postEvents(emu, { body: 'not gzip at all', headers: { 'content-encoding': 'gzip' } });
    expect(bad.status).toBe(400);
    expect((bad.json() as { error: string }).error).toMatch(/cannot be decoded as gzip/);
    const badZstd = await postEvents(emu, { body: 'garbage', headers: { 'content-encoding': 'zstd' } });
    expect(badZstd.status).toBe(400);
    const unknown = await postEvents(emu, { body: 'x', headers: { 'content-encoding': 'br' } });
    expect(unknown.status).toBe(400);
    expect((unknown.json() as { error: string }).error).toMatch(/unsupported Content-Encoding "br"/);
    expect(emu.stats().rows).toEqual({});
  });

  it('400 for a body containing a reject_marker, nothing inserted', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir, faults: [{ kind: 'reject_marker', marker: 'POISON' }] });
    const res = await postEvents(emu, { body: '{"a":1}\n{"b":"POISON"}\n' });
    expect(res.status).toBe(400);
    expect((res.json() as { error: string }).error).toMatch(/marker "POISON"/);
    expect(await readStored(dir, 'events')).toBe('');
    const clean = await postEvents(emu, { body: '{"a":1}\n' });
    expect(clean.status).toBe(200);
  });

  it('403 for a missing, unknown or admin token', async () => {
    const emu = await startEmu();
    for (const token of [null, 'nope', emu.adminToken]) {
      const res = await postEvents(emu, { token });
      expect(res.status).toBe(403);
      expect(res.headers['content-type']).toBe('application/json');
      expect((res.json() as { error: string }).error).toMatch(/token/);
    }
    expect(emu.stats().requests_by_status).toEqual({ '403': 3 });
  });

  it('404 for the foreign-region token', async () => {
    const emu = await startEmu({ foreignToken: 'foreign-1' });
    const res = await postEvents(emu, { token: 'foreign-1' });
    expect(res.status).toBe(404);
    expect((res.json() as { error: string }).error).toMatch(/region/);
  });

  it('413 for maxBody+1 decoded bytes; exactly maxBody is accepted', async () => {
    const dir = await tempDir();
    const maxBody = 1000;
    const emu = await startEmu({ dataDir: dir, maxBody });
    const line = `{"pad":"${'x'.repeat(maxBody - 11)}"}\n`; // 1000 bytes with the newline
    expect(Buffer.byteLength(line)).toBe(maxBody);
    const exact = await postEvents(emu, { body: line });
    expect(exact.status).toBe(200);
    expect(exact.json()).toEqual({ successful_rows: 1, quarantined_rows: 0 });

    const over = `${line} `; // maxBody + 1, uncompressed: refused before buffering
    const raw = await postEvents(emu, { body: over });
    expect(raw.status).toBe(413);
    expect((raw.json() as { error: string }).error).toMatch(/exceeds the size limit of 1000 bytes/);

    const gz = gzipSync(Buffer.from(over)); // small on the wire, too large decoded
    expect(gz.length).toBeLessThan(maxBody);
    const decoded = await postEvents(emu, { body: gz, headers: { 'content-encoding': 'gzip' } });
    expect(decoded.status).toBe(413);
    expect(await readStored(dir, 'events')).toBe(line);
    expect(emu.stats().requests_by_status).toEqual({ '200': 1, '413': 2 });

    // The limit is on the decoded body: exactly maxBody, larger on the wire (gzip level 0), is accepted.
    const stored = gzipSync(Buffer.from(line), { level: 0 });
    expect(stored.length).toBeGreaterThan(maxBody);
    const wireLarger = await postEvents(emu, { body: stored, headers: { 'content-encoding': 'gzip' } });
    expect(wireLarger.status).toBe(200);
    expect(await readStored(dir, 'events')).toBe(line + line);
  });

  it('413 for an oversize streamed body without Content-Length, answered before the body ends', async () => {
    const emu = await startEmu({ maxBody: 1000, recordRequests: true });
    // The body only ends after the answer arrived, so the emulator must answer without reading it all.
    let answered!: () => void;
    const answeredP = new Promise<void>((resolve) => (answered = resolve));
    async function* body() {
      yield Buffer.alloc(600, 0x20);
      yield Buffer.alloc(600, 0x20);
      await answeredP;
    }
    const { request } = await import('undici');
    const { Readable } = await import('node:stream');
    const res = await request(`${emu.url}/v0/events?name=e&wait=true`, {
      method: 'POST',
      headers: { authorization: `Bearer ${emu.token}` },
      body: Readable.from(body()),
    });
    answered();
    expect(res.statusCode).toBe(413);
    expect(((await res.body.json()) as { error: string }).error).toMatch(/size limit of 1000 bytes/);
    expect(emu.requests()[0]).toMatchObject({ outcome: 413, decodedBytes: null });
    expect(emu.requests()[0]!.bodyBytes).toBeGreaterThan(1000);
  });

  it('422 and 500 from partial inserts store the first half of the rows', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir });
    emu.failNext(1, { kind: 'partial', status: 422 });
    const r422 = await postEvents(emu, { body: ndjson(5) });
    expect(r422.status).toBe(422);
    expect((r422.json() as { error: string }).error).toMatch(/Materialized View \(2 of 5 rows stored\)/);
    expect(await readStored(dir, 'events')).toBe(ndjson(2));

    emu.failNext(1, { kind: 'partial', status: 500 });
    const r500 = await postEvents(emu, { name: 'other', body: ndjson(4) });
    expect(r500.status).toBe(500);
    expect((r500.json() as { error: string }).error).toMatch(/2 of 4 rows stored/);
    expect(await readStored(dir, 'other')).toBe(ndjson(2));
  });

  it('429 carries X-RateLimit-Limit/Remaining/Reset and Retry-After', async () => {
    const clock = fakeClock();
    const emu = await startEmu({ rps: 2, now: clock.now });
    expect((await postEvents(emu)).status).toBe(200);
    clock.advance(400);
    expect((await postEvents(emu)).status).toBe(200);
    clock.advance(100);
    const res = await postEvents(emu);
    expect(res.status).toBe(429);
    expect(res.headers['x-ratelimit-limit']).toBe('2');
    expect(res.headers['x-ratelimit-remaining']).toBe('0');
    // The second request (at +400 ms) leaves the window at +1400 ms: 900 ms from now -> 1 s.
    expect(res.headers['x-ratelimit-reset']).toBe('1');
    expect(res.headers['retry-after']).toBe('1');
    expect((res.json() as { error: string }).error).toMatch(/rate limit/);
  });

  it('503 from a status fault: nothing inserted', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir, faults: [{ kind: 'status', status: 503, every: 1 }] });
    const res = await postEvents(emu, { body: ndjson(3) });
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBeUndefined();
    expect((res.json() as { error: string }).error).toMatch(/no data inserted/);
    expect(await readStored(dir, 'events')).toBe('');
  });

  it('405 for a method other than POST', async () => {
    const emu = await startEmu();
    const { request } = await import('undici');
    const res = await request(`${emu.url}/v0/events?name=x`, { headers: { authorization: `Bearer ${emu.token}` } });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('POST');
    await res.body.dump();
  });
});
