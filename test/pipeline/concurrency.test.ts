// max_in_flight: auto against an emulator whose every answer takes 300 ms:
// with the default config the agent goes past 8 requests in flight (the fixed
// default of old), and the compressed bytes in flight never pass
// max_in_flight_bytes (seen at the emulator and in the gauge
// spoolship_in_flight_bytes).
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFor, gauge, jsonLines, rows, startAgent, startEmu, tempDir, waitFor, writeLines } from './helpers.js';

const LATENCY_MS = 300;

describe('adaptive concurrency (max_in_flight: auto)', () => {
  it('goes past 8 requests in flight against slow answers, within max_in_flight_bytes', async () => {
    const dir = await tempDir();
    const spans: Array<{ start: number; end: number; bytes: number }> = [];
    const emu = await startEmu(dir, {
      latencyMs: LATENCY_MS,
      rps: 1000,
      // Recorded when the answer is ready; it leaves LATENCY_MS later.
      onEventsRequest: (r) => spans.push({ start: r.at, end: Date.now() + LATENCY_MS, bytes: r.bodyBytes }),
    });
    const lines = Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ i, pad: `${i}`.repeat(20) }));
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    // ~230 compressed bytes a request: the byte bound, not the cap (64), is what binds here.
    const maxInFlightBytes = 3_000;
    const config = configFor(dir, emu, {
      batch: { max_bytes: 5_000, linger_ms: 50 },
      // auto starts at one second of the rate budget: 40, so a doubling would show (80).
      limits: { max_in_flight_bytes: maxInFlightBytes, requests_per_second: 40 },
      admin: { listen: '127.0.0.1:0' },
    });
    expect(config.limits.max_in_flight).toBe('auto'); // the default
    const { agent } = await startAgent(config);
    // spoolship_in_flight_bytes, read while the lines go out.
    let gaugeMost = 0;
    await waitFor(
      async () => {
        gaugeMost = Math.max(gaugeMost, await gauge(agent, 'spoolship_in_flight_bytes'));
        return rows(emu, dir, 'ev').length === lines.length;
      },
      'every line',
      60_000,
    );
    // The spans are the records: the last one may come just after its rows.
    await emu.settled();
    const metrics = await (await fetch(`${agent.adminUrl}/metrics`)).text();
    const limit = Number(/^spoolship_in_flight_limit (\d+)/m.exec(metrics)?.[1]);
    // Requests that overlapped at the emulator (arrival to answer).
    let most = 0;
    let mostBytes = 0;
    for (const s of spans) {
      const overlapping = spans.filter((o) => o.start <= s.start && o.end > s.start);
      most = Math.max(most, overlapping.length);
      mostBytes = Math.max(mostBytes, overlapping.reduce((n, o) => n + o.bytes, 0));
    }
    console.log(`[auto concurrency] ${JSON.stringify({ most, limit, mostBytes, requests: spans.length })}`);
    expect(most).toBeGreaterThan(8);
    expect(limit).toBeGreaterThan(8);
    expect(limit).toBeLessThan(64); // it grows only while the limit itself binds
    // The emulator's spans end when it estimates the answer leaves (LATENCY_MS
    // after it is ready); the agent frees the bytes only once the answer has
    // arrived, so on a loaded machine a span can outlive its request by a few
    // ms and overlap the next one: one request's bytes (~300) of slack. The
    // gauge below is the agent's exact account.
    expect(mostBytes).toBeLessThanOrEqual(maxInFlightBytes + Math.max(...spans.map((s) => s.bytes)));
    expect(gaugeMost).toBeGreaterThan(0);
    expect(gaugeMost).toBeLessThanOrEqual(maxInFlightBytes);
    // Every answer is in: nothing holds the byte budget any more.
    await waitFor(async () => (await gauge(agent, 'spoolship_in_flight_bytes')) === 0, 'no bytes in flight');
  });
});

describe('max_in_flight_bytes binds: the reader waits', () => {
  it('keeps at most a few batches read beyond the requests the bytes let go', async () => {
    const dir = await tempDir();
    let recorded = 0;
    const emu = await startEmu(dir, {
      latencyMs: 100,
      rps: 1000,
      validateRows: false,
      // Recorded when the answer is ready, before its latency: in flight counts as recorded.
      onEventsRequest: (r) => (recorded += r.decodedBytes ?? 0),
    });
    // 30 batches of 1 MB (the reader's step is 1 MiB, so one read adds to one batch).
    const lines = jsonLines('b', 0, 300_000, 50);
    const file = path.join(dir, 'spool', 'ev', 'a.ndjson');
    await writeLines(file, lines);
    const total = (await stat(file)).size;
    const config = configFor(dir, emu, {
      batch: { max_bytes: 1_000_000, linger_ms: 50 },
      // Smaller than any body: one request at a time, while 16 are allowed.
      limits: { max_in_flight: 16, max_in_flight_bytes: 1, requests_per_second: 1000 },
      admin: { listen: '127.0.0.1:0' },
    });
    const { agent } = await startAgent(config);
    const metric = async (name: string) => {
      const text = await (await fetch(`${agent.adminUrl}/metrics`)).text();
      return [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);
    };
    // Read, not yet at the emulator: the batch being filled, those compressing and those waiting for bytes.
    let most = 0;
    // Taken after the read count comes back: never more than the true lead, however long the fetch took.
    await waitFor(async () => {
      const read = await metric('spoolship_bytes_read_total');
      most = Math.max(most, read - recorded);
      return recorded >= total;
    }, 'every byte at the emulator', 60_000);
    console.log(`[bytes bind] ${JSON.stringify({ mostAheadMB: most / 1e6, totalMB: total / 1e6 })}`);
    // One batch filling + MAX_COMPRESSING + PIPELINE_SLACK waiting + one read step: ~6 MB.
    // Without the bound on bodies waiting for bytes the reader ran max_in_flight + PIPELINE_SLACK + 16 batches ahead (23 MB here).
    expect(most).toBeLessThanOrEqual(10_000_000);
    await waitFor(async () => (await metric('spoolship_lines_acked_total')) === lines.length, 'every line acknowledged');
  });
});
