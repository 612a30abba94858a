// Bodies and rows: encodings, quarantine, format=json, exact stored bytes,
// the count-only sink, and ordering of concurrent appends.
import { gzipSync } from 'node:zlib';
import * as zstd from '@mongodb-js/zstd';
import { describe, expect, it } from 'vitest';
import { ndjson, postEvents, readStored, startEmu, tempDir } from './helpers.js';

describe('bodies and rows', () => {
  it('gzip and zstd bodies are decoded; bytes_in counts the wire bytes', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir });
    const gz = gzipSync(ndjson(3));
    const zs = await zstd.compress(Buffer.from(ndjson(2, 3)), 3);
    expect((await postEvents(emu, { body: gz, headers: { 'content-encoding': 'gzip' } })).json()).toEqual({ successful_rows: 3, quarantined_rows: 0 });
    expect((await postEvents(emu, { body: zs, headers: { 'content-encoding': 'zstd' } })).json()).toEqual({ successful_rows: 2, quarantined_rows: 0 });
    expect(await readStored(dir, 'events')).toBe(ndjson(5));
    expect(emu.stats().bytes_in).toBe(gz.length + zs.length);
  });

  it('stores the exact line bytes: \\r\\n becomes \\n, empty lines are skipped, a last line without \\n is a row', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir });
    const body = '{"a": 1,  "s":"é"}\r\n\n\r\n{"b":[1,2]}\n{"c":null}';
    const res = await postEvents(emu, { body });
    expect(res.json()).toEqual({ successful_rows: 3, quarantined_rows: 0 });
    expect(await readStored(dir, 'events')).toBe('{"a": 1,  "s":"é"}\n{"b":[1,2]}\n{"c":null}\n');
  });

  it('lines that are not JSON objects go to <name>_quarantine, as received', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir });
    const invalidUtf8 = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]); // {"a":"\xff\xfe"}
    const body = Buffer.concat([Buffer.from('{"ok":1}\n[1,2]\n42\nnot json\n{"broken":\n"str"\nnull\n'), invalidUtf8, Buffer.from('\n{"ok":2}\n')]);
    const res = await postEvents(emu, { body });
    expect(res.json()).toEqual({ successful_rows: 2, quarantined_rows: 7 });
    expect(await readStored(dir, 'events')).toBe('{"ok":1}\n{"ok":2}\n');
    const { readFile } = await import('node:fs/promises');
    const q = await readFile(`${dir}/events_quarantine.ndjson`);
    expect(q).toEqual(Buffer.concat([Buffer.from('[1,2]\n42\nnot json\n{"broken":\n"str"\nnull\n'), invalidUtf8, Buffer.from('\n')]));
    expect(emu.stats()).toMatchObject({ rows: { events: 2 }, quarantined: { events: 7 } });
  });

  it('format=json: one multi-line object is one row, stored on one line', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir });
    const res = await postEvents(emu, { body: '{\n  "a": 1,\r\n  "b": {"c": "x"}\n}\n', query: { format: 'json' } });
    expect(res.status).toBe(200);
    expect(res.json()).toEqual({ successful_rows: 1, quarantined_rows: 0 });
    const stored = await readStored(dir, 'events');
    expect(stored.split('\n')).toHaveLength(2);
    expect(JSON.parse(stored)).toEqual({ a: 1, b: { c: 'x' } });
    const bad = await postEvents(emu, { body: '[1,\n2]', query: { format: 'json' } });
    expect(bad.json()).toEqual({ successful_rows: 0, quarantined_rows: 1 });
    expect((await postEvents(emu, { query: { format: 'csv' } })).status).toBe(400);
  });

  it('count-only mode (no dataDir) counts rows and quarantine', async () => {
    const emu = await startEmu();
    const res = await postEvents(emu, { body: `${ndjson(4)}oops\n` });
    expect(res.json()).toEqual({ successful_rows: 4, quarantined_rows: 1 });
    expect(emu.stats()).toMatchObject({ rows: { events: 4 }, quarantined: { events: 1 } });
  });

  it('validateRows: false counts every non-empty line as a row (benchmark sink)', async () => {
    const emu = await startEmu({ validateRows: false });
    const res = await postEvents(emu, { body: `${ndjson(4)}oops\n\n[1]\n` });
    expect(res.json()).toEqual({ successful_rows: 6, quarantined_rows: 0 });
    expect(emu.stats()).toMatchObject({ rows: { events: 6 }, quarantined: {} });
  });

  it('concurrent requests append whole bodies without interleaving', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir, rps: 1000 });
    const bodies = Array.from({ length: 40 }, (_, i) => ndjson(200, i * 1000));
    const answers = await Promise.all(bodies.map((body) => postEvents(emu, { body })));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const stored = await readStored(dir, 'events');
    // Each body appears once, contiguous (order between requests is arrival order).
    for (const body of bodies) expect(stored.split(body)).toHaveLength(2);
    expect(stored.length).toBe(bodies.join('').length);
  });
});
