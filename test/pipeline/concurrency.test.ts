// max_in_flight: auto against an emulator whose every answer takes 300 ms:
// with the default config the agent goes past 8 requests in flight (the fixed
// default of old), and the compressed bytes in flight never pass
// max_in_flight_bytes.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFor, rows, startAgent, startEmu, tempDir, waitFor, writeLines } from './helpers.js';

const LATENCY_MS = 300;

describe('adaptive concurrency (max_in_flight: auto)', () => {
  it('grows past 8 requests in flight against slow answers, within max_in_flight_bytes', async () => {
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
      limits: { max_in_flight_bytes: maxInFlightBytes, requests_per_second: 1000 },
      admin: { listen: '127.0.0.1:0' },
    });
    expect(config.limits.max_in_flight).toBe('auto'); // the default
    const { agent } = await startAgent(config);
    await waitFor(() => rows(emu, dir, 'ev').length === lines.length, 'every line', 60_000);
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
    expect(mostBytes).toBeLessThanOrEqual(maxInFlightBytes);
  });
});
