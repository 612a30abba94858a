// The platform's 5-hour deduplication of retried partial inserts, both ways.
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { fakeClock, ndjson, newAgent, postEvents, readStored, startEmu, tempDir } from './helpers.js';

describe('partial-insert deduplication', () => {
  it('a byte-identical retry after a failed partial insert stores only the rest', async () => {
    const dir = await tempDir();
    const clock = fakeClock();
    const emu = await startEmu({ dataDir: dir, now: clock.now });
    const body = gzipSync(ndjson(9));
    emu.failNext(1, { kind: 'partial', status: 500 });
    const first = await postEvents(emu, { body, headers: { 'content-encoding': 'gzip' } });
    expect(first.status).toBe(500);
    expect(await readStored(dir, 'events')).toBe(ndjson(4));
    clock.advance(4 * 60 * 60 * 1000); // 4 h later: still inside the window
    const retry = await postEvents(emu, { body, headers: { 'content-encoding': 'gzip' } });
    expect(retry.status).toBe(200);
    expect(retry.json()).toEqual({ successful_rows: 9, quarantined_rows: 0 });
    expect(await readStored(dir, 'events')).toBe(ndjson(9)); // each row exactly once
    expect(emu.stats().rows).toEqual({ events: 9 });
    // That retry succeeded: the same body once more is new data.
    await postEvents(emu, { body, headers: { 'content-encoding': 'gzip' } });
    expect(await readStored(dir, 'events')).toBe(ndjson(9) + ndjson(9));
  });

  it('the same rows sent uncompressed count as the same decoded body', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir });
    emu.failNext(1, { kind: 'partial', status: 422 });
    expect((await postEvents(emu, { body: gzipSync(ndjson(4)), headers: { 'content-encoding': 'gzip' } })).status).toBe(422);
    expect((await postEvents(emu, { body: ndjson(4) })).status).toBe(200);
    expect(await readStored(dir, 'events')).toBe(ndjson(4));
  });

  it('a different Data Source or a different body is not deduplicated', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir });
    emu.failNext(1, { kind: 'partial', status: 500 });
    await postEvents(emu, { body: ndjson(4) });
    await postEvents(emu, { name: 'other', body: ndjson(4) });
    await postEvents(emu, { body: ndjson(5) });
    expect(await readStored(dir, 'other')).toBe(ndjson(4));
    expect(await readStored(dir, 'events')).toBe(ndjson(2) + ndjson(5));
  });

  it('a retry after a success stores everything twice', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir });
    await postEvents(emu, { body: ndjson(3) });
    await postEvents(emu, { body: ndjson(3) });
    expect(await readStored(dir, 'events')).toBe(ndjson(3) + ndjson(3));
  });

  it('a retry after reset_after_insert stores everything again', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir });
    emu.failNext(1, { kind: 'reset_after_insert' });
    await expect(postEvents(emu, { body: ndjson(2) }, newAgent())).rejects.toThrow();
    expect((await postEvents(emu, { body: ndjson(2) })).status).toBe(200);
    expect(await readStored(dir, 'events')).toBe(ndjson(2) + ndjson(2));
  });

  it('a retry after partial then reset_after_insert stores the rest once, and a further retry everything', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir });
    emu.failNext(1, { kind: 'partial', status: 500 });
    emu.failNext(1, { kind: 'reset_after_insert' });
    await postEvents(emu, { body: ndjson(4) });
    await expect(postEvents(emu, { body: ndjson(4) }, newAgent())).rejects.toThrow();
    expect(await readStored(dir, 'events')).toBe(ndjson(4));
    await postEvents(emu, { body: ndjson(4) });
    expect(await readStored(dir, 'events')).toBe(ndjson(4) + ndjson(4));
  });

  it('outside the 5 h window the retry stores everything again', async () => {
    const dir = await tempDir();
    const clock = fakeClock();
    const emu = await startEmu({ dataDir: dir, now: clock.now });
    emu.failNext(1, { kind: 'partial', status: 500 });
    await postEvents(emu, { body: ndjson(6) });
    clock.advance(5 * 60 * 60 * 1000 + 1);
    expect((await postEvents(emu, { body: ndjson(6) })).status).toBe(200);
    expect(await readStored(dir, 'events')).toBe(ndjson(3) + ndjson(6));
  });

  it('a second partial failure of the same body stores nothing new; the final retry the rest', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir });
    emu.failNext(2, { kind: 'partial', status: 500 });
    await postEvents(emu, { body: ndjson(6) });
    await postEvents(emu, { body: ndjson(6) });
    expect(await readStored(dir, 'events')).toBe(ndjson(3));
    await postEvents(emu, { body: ndjson(6) });
    expect(await readStored(dir, 'events')).toBe(ndjson(6));
  });
});
