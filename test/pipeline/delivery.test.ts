import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFor, expectByteIdenticalRetries, expectExactlyOnce, jsonLines, rows, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines } from './helpers.js';

describe('delivery', () => {
  it('ships three Data Sources, 100k lines, each line exactly once, in requests that follow the rules', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const maxBytes = 200_000;
    const config = configFor(dir, emu, { batch: { max_bytes: maxBytes, max_open_bytes: 1_000_000 } });
    const expected: Record<string, string[]> = {};
    for (const ds of ['alpha', 'beta', 'gamma']) {
      expected[ds] = [];
      for (let f = 0; f < 2; f++) {
        const lines = jsonLines(`${ds}${f}`, 0, ds === 'gamma' && f === 1 ? 16_670 : 16_666, 20);
        expected[ds].push(...lines);
        await writeLines(path.join(dir, 'spool', ds, `part${f}.ndjson`), lines);
      }
    }
    expect(Object.values(expected).flat()).toHaveLength(100_000);
    const { stop } = await startAgent(config);
    for (const ds of Object.keys(expected)) {
      await waitForRows(emu, dir, ds, expected[ds]!, `${ds} rows`);
    }
    await stop();
    for (const [ds, lines] of Object.entries(expected)) expectExactlyOnce(rows(emu, dir, ds), lines);
    const reqs = emu.requests();
    expect(reqs.length).toBeGreaterThan(10);
    for (const r of reqs) {
      expect(r.wait).toBe('true');
      expect(r.authorization).toBe(`Bearer ${emu.token}`);
      expect(r.contentEncoding).toBe('zstd');
      expect(r.decodedBytes).not.toBeNull();
      expect(r.decodedBytes!).toBeLessThanOrEqual(maxBytes);
      expect(r.outcome).toBe(200);
    }
  });

  it('keeps order within a file and sends whole lines: CRLF as LF, empty lines skipped, partial line held', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const file = path.join(dir, 'spool', 'ev', 'a.ndjson');
    await writeLines(file, []);
    const { appendFile } = await import('node:fs/promises');
    await appendFile(file, '{"a":1}\r\n\n{"a":2}\n\r\n{"a":3}\n{"a":"part');
    const { stop } = await startAgent(configFor(dir, emu, { compression: { codec: 'none' } }));
    await waitForRows(emu, dir, 'ev', ['{"a":1}', '{"a":2}', '{"a":3}'], '3 rows');
    // The partial line is not sent while its newline is missing: a line
    // written to another file afterwards goes out in a later batch, and the
    // held part is in none of them.
    await writeLines(path.join(dir, 'spool', 'ev', 'b.ndjson'), ['{"b":1}']);
    await waitForRows(emu, dir, 'ev', ['{"a":1}', '{"a":2}', '{"a":3}', '{"b":1}'], 'a later batch without the partial line');
    await appendFile(file, 'ial"}\n');
    await waitForRows(emu, dir, 'ev', ['{"a":1}', '{"a":2}', '{"a":3}', '{"b":1}', '{"a":"partial"}'], 'completed partial line');
    await stop();
    expect(rows(emu, dir, 'ev')).toEqual(['{"a":1}', '{"a":2}', '{"a":3}', '{"b":1}', '{"a":"partial"}']);
    for (const r of emu.requests()) expect(r.contentEncoding).toBeUndefined();
  });

  it('resumes after a graceful stop with nothing missing and no duplicates', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const config = configFor(dir, emu, { batch: { max_bytes: 50_000 } });
    const file = path.join(dir, 'spool', 'ev', 'a.ndjson');
    const first = jsonLines('r', 0, 20_000);
    await writeLines(file, first);
    const a = await startAgent(config);
    await waitFor(() => rows(emu, dir, 'ev').length > 2_000, 'some rows');
    await a.stop();
    const second = jsonLines('r', 20_000, 5_000);
    await writeLines(file, second);
    const b = await startAgent(config);
    await waitForRows(emu, dir, 'ev', [...first, ...second], 'all rows');
    await b.stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), [...first, ...second]);
  });

  it('sends the last partial batch of a backlog without waiting linger_ms, while a trickle keeps lingering', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    // linger_ms far beyond the wait below: only the end-of-backlog rule can deliver the tail.
    const config = configFor(dir, emu, { batch: { max_bytes: 50_000, linger_ms: 120_000 }, compression: { codec: 'none' } });
    await writeLines(path.join(dir, 'spool', 'drip', 'a.ndjson'), jsonLines('d', 0, 3));
    const bulk = jsonLines('b', 0, 4_000, 20); // ~240 KB: 4 full batches and a partial one
    await writeLines(path.join(dir, 'spool', 'bulk', 'a.ndjson'), bulk);
    const { stop } = await startAgent(config);
    await waitForRows(emu, dir, 'bulk', bulk, 'the whole backlog', { timeoutMs: 20_000 });
    // The emulator records a request just after storing its rows.
    const bulkRequests = () => emu.requests().filter((r) => r.name === 'bulk').length;
    const expectedRequests = Math.ceil(Buffer.byteLength(bulk.join('\n') + '\n') / 50_000);
    await waitFor(() => bulkRequests() === expectedRequests, `${expectedRequests} bulk requests`);
    // The trickle's batch never closed full: it is still open (it would go at linger_ms).
    expect(rows(emu, dir, 'drip')).toEqual([]);
    await stop(); // a stop closes open batches and sends them
    expect(bulkRequests()).toBe(expectedRequests);
    expectExactlyOnce(rows(emu, dir, 'drip'), jsonLines('d', 0, 3));
    expectExactlyOnce(rows(emu, dir, 'bulk'), bulk);
  });

  it('notices new files and appended lines through the directory watch alone (no rescan)', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const file = path.join(dir, 'spool', 'ev', 'a.ndjson');
    await writeLines(file, jsonLines('w', 0, 10));
    const { stop } = await startAgent(configFor(dir, emu), { rescanMs: 3_600_000 });
    await waitForRows(emu, dir, 'ev', jsonLines('w', 0, 10), 'the first scan');
    // The watcher starts after the first scan; appends until one is noticed.
    let n = 10;
    await waitFor(async () => {
      await writeLines(file, jsonLines('w', n, 5));
      n += 5;
      return rows(emu, dir, 'ev').length > 10;
    }, 'an append noticed by the watch');
    await waitForRows(emu, dir, 'ev', jsonLines('w', 0, n), 'every appended line');
    await writeLines(path.join(dir, 'spool', 'ev', 'b.ndjson'), jsonLines('x', 0, 3));
    await writeLines(path.join(dir, 'spool', 'other', 'c.ndjson'), jsonLines('y', 0, 2)); // a new directory too
    await waitForRows(emu, dir, 'ev', [...jsonLines('w', 0, n), ...jsonLines('x', 0, 3)], 'the new file noticed by the watch');
    await waitForRows(emu, dir, 'other', jsonLines('y', 0, 2), 'the new directory noticed by the watch');
    // The new directory is watched too: an append and a new file there.
    await writeLines(path.join(dir, 'spool', 'other', 'c.ndjson'), jsonLines('y', 2, 2));
    await writeLines(path.join(dir, 'spool', 'other', 'd.ndjson'), jsonLines('z', 0, 2));
    await waitForRows(emu, dir, 'other', [...jsonLines('y', 0, 4), ...jsonLines('z', 0, 2)], 'the new directory watched');
    await stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), [...jsonLines('w', 0, n), ...jsonLines('x', 0, 3)]);
  });

  it('compresses with gzip when asked and declares it', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const lines = jsonLines('g', 0, 500);
    await writeLines(path.join(dir, 'spool', 'gz', 'a.ndjson'), lines);
    const { stop } = await startAgent(configFor(dir, emu, { compression: { codec: 'gzip', level: 6 } }));
    await waitForRows(emu, dir, 'gz', lines, 'rows');
    await stop();
    expect(emu.requests().every((r) => r.contentEncoding === 'gzip')).toBe(true);
  });

  it('retries through the pipeline are byte-identical: partially stored batches are completed by the dedup, never stored twice', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    // Every third request stores half its rows and answers 500: only a retry
    // with the very same bytes gets the other half and nothing twice. Many
    // small zstd batches in flight at once share the pipeline's body buffers.
    emu.setFaults([{ kind: 'partial', status: 500, every: 3 }]);
    const config = configFor(dir, emu, { batch: { max_bytes: 20_000 }, limits: { max_in_flight: 8 } });
    const lines = jsonLines('r', 0, 6000, 20);
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    const { stop } = await startAgent(config);
    await waitForRows(emu, dir, 'ev', lines, 'all rows');
    await stop();
    expect(emu.requests().filter((r) => r.outcome === 500).length).toBeGreaterThan(5);
    expect(expectByteIdenticalRetries(emu.requests()), "batches sent again").toBeGreaterThanOrEqual(3);
    expectExactlyOnce(rows(emu, dir, 'ev'), lines);
  });
});
