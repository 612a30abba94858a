// The emulator as a server facing hostile clients: bounded memory for
// compression bombs, no body read before auth, bounded descriptors, clean
// 400s for bad names and deep JSON.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { createCodec } from '../../src/codec/index.js';
import { describe, expect, it } from 'vitest';
import { zstdDecodedBound } from '../../src/emulator/events/zstd-bound.js';
import { MAX_OPEN_ROW_FILES, rowFileName } from '../../src/emulator/events/row-store.js';
import { getJson, ndjson, postEvents, readStored, startEmu, tempDir } from './helpers.js';

const zstd = createCodec('zstd', 3);

describe('emulator hardening', () => {
  it('a zstd bomb is answered 413 from its headers, without decoding it', async () => {
    const emu = await startEmu({ maxBody: 10_000_000 });
    // 64 MB of one byte compresses to a few KB; its blocks say how large it is.
    const bomb = await zstd.compress(Buffer.alloc(64 * 1024 * 1024, 0x61));
    expect(bomb.length).toBeLessThan(64 * 1024);
    const bound = zstdDecodedBound(bomb);
    expect(bound.ok && bound.maxBytes).toBeGreaterThanOrEqual(64 * 1024 * 1024);
    const a = await postEvents(emu, { body: bomb, headers: { 'content-encoding': 'zstd' } });
    expect(a.status).toBe(413);
    // A body of exactly --max-body still goes in.
    const exact = `${'{"a":"'.padEnd(9_999_997, 'x')}"}\n`;
    expect(exact.length).toBe(10_000_000);
    const ok = await postEvents(emu, { body: await zstd.compress(Buffer.from(exact)), headers: { 'content-encoding': 'zstd' } });
    expect(ok.status).toBe(200);
    const garbage = await postEvents(emu, { body: Buffer.from('not zstd at all'), headers: { 'content-encoding': 'zstd' } });
    expect(garbage.status).toBe(400);
  });

  it('authenticates before reading the body: a bad token gets 403 and nothing is read', async () => {
    const emu = await startEmu();
    const a = await postEvents(emu, { token: 'wrong', body: Buffer.alloc(5_000_000, 0x61) });
    expect(a.status).toBe(403);
    expect(emu.stats().bytes_in).toBe(0);
  });

  it(`keeps at most ${MAX_OPEN_ROW_FILES} row files open, whatever the number of Data Sources, and loses no row`, async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir, rps: 100_000 });
    const names = Array.from({ length: MAX_OPEN_ROW_FILES * 3 }, (_, i) => `ds_${i}`);
    for (const name of names) expect((await postEvents(emu, { name, body: ndjson(2) })).status).toBe(200);
    // Back to the first (closed) ones: appended after what they held.
    for (const name of names.slice(0, 5)) expect((await postEvents(emu, { name, body: ndjson(1, 2) })).status).toBe(200);
    const fds = await readdir('/proc/self/fd');
    expect(fds.length).toBeLessThan(MAX_OPEN_ROW_FILES + 200);
    await emu.close();
    expect(await readStored(dir, 'ds_0')).toBe(ndjson(3));
    expect(await readStored(dir, `ds_${names.length - 1}`)).toBe(ndjson(2));
  });

  it('a name over 255 characters is a 400 that leaks no path; <name>_quarantine cannot be appended to', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir });
    const long = await postEvents(emu, { name: 'a'.repeat(300) });
    expect(long.status).toBe(400);
    expect(long.text).not.toContain(dir);
    expect((await postEvents(emu, { name: 'a'.repeat(255), body: '{"long":1}\nnot json\n' })).status).toBe(200);
    expect((await postEvents(emu, { name: 'x', body: '{"ok":1}\nnot json\n' })).json()).toEqual({ successful_rows: 1, quarantined_rows: 1 });
    const q = await postEvents(emu, { name: 'x_quarantine', body: '{"mine":1}\n' });
    expect(q.status).toBe(400);
    await emu.close();
    expect(await readStored(dir, 'x_quarantine')).toBe('not json\n');
    expect(await readFile(path.join(dir, rowFileName('a'.repeat(255))), 'utf8')).toBe('{"long":1}\n');
    expect(await readFile(path.join(dir, rowFileName(`${'a'.repeat(255)}_quarantine`)), 'utf8')).toBe('not json\n');
  });

  it('JSON nested 100,000 deep to the cluster API is a 400, and the emulator still serves', async () => {
    const emu = await startEmu();
    const list = (await getJson(`${emu.url}/v0/organizations/${emu.org}/clusters?token=${emu.adminToken}`)) as { status: number };
    void list;
    const deep = `{"replica_size":"16-64","new_replica":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    const res = await fetch(`${emu.url}/v0/organizations/${emu.org}/clusters/aws-eu-central-1-01/replicas`, {
      method: 'POST',
      headers: { authorization: `Bearer ${emu.adminToken}`, 'content-type': 'application/json' },
      body: deep,
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toContain('nested more than 32 levels');
    expect((await postEvents(emu)).status).toBe(200);
  });
});
