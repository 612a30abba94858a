// The 413 episode the sender raises for the log (sender/split-episode.ts):
// one start at the first 413 that cuts a batch, one end when every batch it
// concerns is resolved, with totals; never one per request. The metric
// (a retry of reason 413 per answer) stays per request.
import { describe, expect, it } from 'vitest';
import { harness, lines, settle } from './helpers.js';

const padded = (p: string, n: number) => Array.from({ length: n }, (_, i) => JSON.stringify({ k: `${p}${i}`, pad: 'y'.repeat(30) }));

describe('Sender: a 413 episode', () => {
  it('fresh batches in flight at the first 413: one start, one end once all are resolved, whatever the number of 413s', async () => {
    const h = await harness({ dataDir: null, maxBody: 1500, rps: 100_000 }, { maxBytes: 100_000 });
    const batches = await Promise.all(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map((p, i) => h.batch(`ds${i % 4}`, padded(p, 600))));
    const results = await Promise.all(batches.map((b) => h.sender.deliver(b, { neverSent: true })));
    expect(results.every((r) => r === 'done')).toBe(true);
    const answers413 = h.emu.stats().requests_by_status['413'] ?? 0;
    expect(answers413).toBeGreaterThan(2);
    expect(h.retries.filter((r) => r === '413')).toHaveLength(answers413);
    expect(h.splits.map((e) => e.phase)).toEqual(['start', 'end']);
    const [start, end] = h.splits as [Extract<(typeof h.splits)[0], { phase: 'start' }>, Extract<(typeof h.splits)[0], { phase: 'end' }>];
    expect(start.learnedBytes).toBe(Math.floor(start.rawBytes / 2));
    expect(start.lines).toBe(600);
    expect(end).toMatchObject({ outcome: 'done', answers413, linesDeadLettered: 0, learnedBytes: h.sender.capFor() });
    // Batches still waiting for their turn were cut to the learned limit before they went: no 413, not the episode's.
    expect(end.batches).toBeGreaterThanOrEqual(1);
    expect(end.linesAcked).toBe(600 * end.batches);
  });

  it('batches sent whole over the learned limit (sent before) belong to the episode while they wait, also one that starts meanwhile: one start, one end after the last', async () => {
    const h = await harness({ dataDir: null, maxBody: 1500, rps: 100_000 }, { maxBytes: 10_000 });
    // Batches that were sent before (queued) go whole until a 413 says nothing
    // was stored; an outage of their Data Sources holds them in backoff.
    h.emu.setFaults([{ kind: 'status', status: 503, datasource: 'q' }, { kind: 'status', status: 503, datasource: 'r' }]);
    const q = h.sender.deliver(await h.batch('q', padded('q', 90)));
    await settle(() => h.clock.waiting === 1, 'q in backoff');
    // A fresh batch: its 413 starts the episode. q, waiting to go whole over the learned limit, is part of it.
    expect(await h.sender.deliver(await h.batch('p', padded('p', 90)), { neverSent: true })).toBe('done');
    expect(h.splits.map((e) => e.phase), 'q keeps it open').toEqual(['start']);
    // r starts while it lasts, over the limit and to be sent whole too.
    const r = h.sender.deliver(await h.batch('r', padded('r', 90)));
    await settle(() => h.clock.waiting === 2, 'r in backoff');
    h.emu.setFaults([{ kind: 'status', status: 503, datasource: 'r' }]);
    h.clock.advance(500);
    // q goes: a 413, cut, resolved; r is still held by its outage.
    expect(await q).toBe('done');
    expect(h.splits.map((e) => e.phase), 'r keeps it open').toEqual(['start']);
    h.emu.setFaults([]);
    await settle(() => h.clock.waiting === 1, 'r in backoff again');
    h.clock.advance(h.clock.nextWakeInMs()!);
    expect(await r).toBe('done');
    const answers413 = h.emu.stats().requests_by_status['413'] ?? 0;
    expect(answers413).toBeGreaterThanOrEqual(3);
    expect(h.splits.map((e) => e.phase)).toEqual(['start', 'end']);
    expect(h.splits[1]).toMatchObject({ phase: 'end', outcome: 'done', batches: 3, answers413, linesAcked: 270, linesDeadLettered: 0 });
    expect(h.emu.stats().rows).toEqual({ p: 90, q: 90, r: 90 });
  });

  it('a line too long inside an episode is in its totals; a lone line too long with no episode open raises none', async () => {
    const h = await harness({ dataDir: null, maxBody: 2000 }, { maxBytes: 10_000 });
    const big = JSON.stringify({ k: 'x'.repeat(2500) });
    expect(await h.sender.deliver(await h.batch('ds', [big]))).toBe('done');
    expect(h.deadLetters).toEqual([{ ds: 'ds', reason: 'line_too_long', status: 413, lines: [big] }]);
    expect(h.splits, 'nothing was cut').toEqual([]);
    expect(await h.sender.deliver(await h.batch('ds', [...lines('m', 100), big]))).toBe('done');
    expect(h.splits.map((e) => e.phase)).toEqual(['start', 'end']);
    expect(h.splits[1]).toMatchObject({ outcome: 'done', batches: 1, linesAcked: 100, linesDeadLettered: 1 });
    expect(h.emu.stats().rows).toEqual({ ds: 100 });
  });
});
