// `datasources` (which Data Sources exist) and `appendTokens` (APPEND-only
// tokens): a new name is created by its first append, which needs a CREATE
// token and fits in 5 creations per minute per organization.
import { describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/index.js';
import { fakeClock, ndjson, postEvents, readStored, startEmu, tempDir } from './helpers.js';

describe('Data Sources that exist, and APPEND-only tokens', () => {
  it('an APPEND-only token appends to an existing Data Source; to a missing one it is 403 before the body is read', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir, datasources: ['app'], appendTokens: ['ap'] });
    expect(emu.appendTokens).toEqual(['ap']);
    expect((await postEvents(emu, { name: 'app', token: 'ap', body: ndjson(1) })).status).toBe(200);
    const bytesBefore = emu.stats().bytes_in;
    const refused = await postEvents(emu, { name: 'fresh', token: 'ap', body: ndjson(1) });
    expect(refused.status).toBe(403);
    expect(refused.json()).toEqual({ error: expect.any(String) });
    expect(emu.stats().bytes_in).toBe(bytesBefore);
    expect(await readStored(dir, 'fresh')).toBe('');
    // A CREATE token creates it; then the APPEND-only token may append.
    expect((await postEvents(emu, { name: 'fresh', body: ndjson(1) })).status).toBe(200);
    expect((await postEvents(emu, { name: 'fresh', token: 'ap', body: ndjson(1, 1) })).status).toBe(200);
    expect(await readStored(dir, 'fresh')).toBe(ndjson(2));
  });

  it('without a list every name exists: APPEND-only tokens append anywhere and nothing counts as a creation', async () => {
    const emu = await startEmu({ appendTokens: ['ap'] });
    for (let i = 0; i < 8; i++) expect((await postEvents(emu, { name: `ds_${i}`, token: 'ap' })).status).toBe(200);
  });

  it('at most 5 creations per minute: the 6th new name is 429 with Retry-After; refused creations do not count', async () => {
    const clock = fakeClock();
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir, datasources: ['app'], appendTokens: ['ap'], now: clock.now });
    // Two racing first appends to one new name create it once.
    const racing = await Promise.all([postEvents(emu, { name: 'new_0' }), postEvents(emu, { name: 'new_0' })]);
    expect(racing.map((r) => r.status)).toEqual([200, 200]);
    for (let i = 1; i < 5; i++) {
      clock.advance(1000);
      expect((await postEvents(emu, { name: `new_${i}` })).status).toBe(200);
    }
    const limited = await postEvents(emu, { name: 'new_5', body: ndjson(1) });
    expect(limited.status).toBe(429);
    expect(limited.headers).toMatchObject({ 'retry-after': '56', 'x-ratelimit-limit': '5', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '56' });
    expect(await readStored(dir, 'new_5')).toBe('');
    expect((await postEvents(emu, { name: 'new_5', token: 'ap' })).status).toBe(403); // still does not exist
    // Existing and created Data Sources are not limited.
    expect((await postEvents(emu, { name: 'app' })).status).toBe(200);
    expect((await postEvents(emu, { name: 'new_4', token: 'ap' })).status).toBe(200);
    clock.advance(55_999);
    expect((await postEvents(emu, { name: 'new_5' })).status).toBe(429);
    clock.advance(1);
    // The first creation left the window; the refused attempts took no slot.
    expect((await postEvents(emu, { name: 'new_5', body: ndjson(1) })).status).toBe(200);
    expect(await readStored(dir, 'new_5')).toBe(ndjson(1));
    expect((await postEvents(emu, { name: 'new_6' })).status).toBe(429);
    expect(emu.stats().requests_by_status).toMatchObject({ '429': 3, '403': 1 });
  });

  it('a name in the list must be a valid Data Source name', async () => {
    await expect(startEmulator({ listen: '127.0.0.1:0', datasources: ['ok', 'not-ok'] })).rejects.toMatchObject({ code: 'SPOOLSHIP_ERR_EMULATOR_OPTIONS' });
  });
});
