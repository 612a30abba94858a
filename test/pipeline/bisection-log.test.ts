// A batch's 400 episode is logged as a few state changes, never one line per
// request of the bisection (README "Logs"): one WARN when it starts, one
// event per dead-letter write with its count, one when it ends with totals.
// The lines a bisection isolates are written together, once the batch is
// resolved: one write, one event, whatever their number (an audit saw 100
// events for 100 bad lines, one per line).
// Issue: 3 bad lines among 2,000 wrote ~40 lines ('retrying' with a null
// cause and a "same bytes" message, then 'retry_streak_over', alternating).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { captureLogs, type LogRecord } from '../support/log-capture.js';
import { configFor, expectExactlyOnce, jsonLines, onCleanup, rows, startEmu, tempDir, waitFor, waitForRows, writeLines } from './helpers.js';

type Rec = LogRecord;


function deadLetters(file: string): Rec[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Rec);
}

describe('400 bisection logging', () => {
  it('3 bad lines among 2,000: one WARN at the start, one dead-letter write of all 3, one at the end; nothing per request or per line', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { faults: [{ kind: 'reject_marker', marker: 'POISON' }] });
    const good = jsonLines('g', 0, 2000);
    const bad = ['{"id":"POISON-1"}', '{"id":"POISON-2"}', '{"id":"POISON-3"}'];
    // Spread over the batch: quarters 1, 2 and 3.
    const lines = [...good.slice(0, 500), bad[0]!, ...good.slice(500, 1000), bad[1]!, ...good.slice(1000, 1500), bad[2]!, ...good.slice(1500)];
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    const { logs, log } = captureLogs({ levelWords: true });
    // The whole file is on disk before the start and linger is long: it is read into one batch.
    const config = configFor(dir, emu, { batch: { linger_ms: 2000 }, compression: { codec: 'none' } });
    const agent = await Agent.start(config, { log, rescanMs: 50 });
    onCleanup(() => agent.close());
    const dlFile = path.join(dir, 'state', 'dead-letter', 'ev.ndjson');
    await waitForRows(emu, dir, 'ev', good, 'the good rows stored');
    await waitFor(() => deadLetters(dlFile).length === 3, 'the bad lines dead-lettered');
    // The end event follows the dead-letter writes; without it the counts below say what was logged instead.
    await waitFor(() => logs.some((l) => l.event === 'bisection_over'), 'the end of the episode logged', 10_000).catch(() => undefined);
    await agent.close();

    expectExactlyOnce(rows(emu, dir, 'ev'), good);
    const dl = deadLetters(dlFile);
    expect(dl.map((r) => r.line).sort()).toEqual(bad);
    expect(dl.every((r) => r.reason === 'rejected' && r.status === 400)).toBe(true);

    const requests400 = emu.stats().requests_by_status['400'] ?? 0;
    expect(requests400).toBeGreaterThan(6); // a real bisection, many 400s
    const counts: Record<string, number> = {};
    for (const l of logs) if (typeof l.event === 'string') counts[l.event] = (counts[l.event] ?? 0) + 1;
    const episode = Object.fromEntries(['bisection_started', 'dead_letters_written', 'bisection_over', 'retrying', 'retry_streak_over'].map((e) => [e, counts[e] ?? 0]));
    expect(episode).toEqual({ bisection_started: 1, dead_letters_written: 1, bisection_over: 1, retrying: 0, retry_streak_over: 0 });

    const start = logs.find((l) => l.event === 'bisection_started')!;
    expect(start).toMatchObject({ level: 'warn', datasource: 'ev', lines: 2003, status: 400 });
    expect(logs.find((l) => l.event === 'dead_letters_written')).toMatchObject({ level: 'warn', datasource: 'ev', reason: 'rejected', count: 3, lines: 3, batch: start.batch });
    const end = logs.find((l) => l.event === 'bisection_over')!;
    expect(end).toMatchObject({ datasource: 'ev', batch: start.batch, outcome: 'done', lines_acked: 2000, lines_dead_lettered: 3 });
    // Every 400 of the episode, and every acknowledged piece, in one total.
    expect(end.requests).toBeGreaterThanOrEqual(requests400);
  });
});
