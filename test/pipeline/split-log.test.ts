// A backlog cut by 413s is logged as one episode, like a 400's bisection
// (docs/metrics.md "Logs", docs/answers.md): one WARN when the first 413
// cuts a batch, one event when the batches it concerns are resolved, nothing
// per request. A 413 is no failing request resent with the same bytes: its
// pieces are new bodies. Before, every 413 logged a 'learned_max_body' WARN,
// and 413s went through the retry streak: a WARN 'retrying' ("resent with
// the same bytes"), then 'retry_streak_over' at the next acknowledged piece,
// again at the next 413 (replaying 3 queued batches, in one run: 9
// 'learned_max_body', 7 'retrying' of which 6 for 413s, 7 'retry_streak_over').
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { captureLogs, type LogRecord } from '../support/log-capture.js';
import { configFor, expectExactlyOnce, gauge, jsonLines, onCleanup, startEmu, tempDir, waitFor, waitForRows, writeLines } from './helpers.js';

type Rec = LogRecord;


/** The emulator's body limit, below the batches' size. */
const MAX_BODY = 150_000;
const MAX_BATCH = 400_000;

/**
 * 1.2 MB in 400 KB batches against a 150 KB body limit, read from a file on
 * disk before the start. `outage`: the API answers 503 until 3 batches are
 * in the disk queue; sent before, they are never cut before a 413 of their own.
 */
async function run(outage: boolean) {
  const dir = await tempDir();
  const emu = await startEmu(dir, { maxBody: MAX_BODY });
  if (outage) emu.setFaults([{ kind: 'status', status: 503 }]);
  const lines = jsonLines('s', 0, 6500, 150);
  await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
  const { logs, log } = captureLogs({ levelWords: true });
  const config = configFor(dir, emu, { batch: { linger_ms: 300, max_bytes: MAX_BATCH }, compression: { codec: 'none' } });
  const agent = await Agent.start(config, { log, rescanMs: 50 });
  onCleanup(() => agent.close());
  if (outage) {
    await waitFor(async () => (await gauge(agent, 'spoolship_queue_batches')) >= 3, 'the batches queued during the outage');
    emu.setFaults([]);
  }
  expectExactlyOnce(await waitForRows(emu, dir, 'ev', lines, 'every line stored'), lines);
  // The end event follows the last cut batch's acknowledgement (observe/split-log.ts: 2 s later, on the tick); without it the counts below say what was logged instead.
  await waitFor(() => logs.some((l) => l.event === 'split_over'), 'the end of the episode logged', 10_000).catch(() => undefined);
  const retries413 = await gauge(agent, 'spoolship_retries_total', '{reason="413"}');
  const learned = await gauge(agent, 'spoolship_learned_max_body_bytes');
  await agent.close();

  const answers413 = emu.stats().requests_by_status['413'] ?? 0;
  expect(answers413).toBeGreaterThanOrEqual(2); // 400 KB, then ~200 KB: a ladder, not one answer
  // The metrics are per request, as before: every 413 is a retry of reason 413.
  expect(retries413).toBe(answers413);
  expect(learned).toBeLessThanOrEqual(MAX_BODY);

  const counts: Record<string, number> = {};
  for (const l of logs) if (typeof l.event === 'string') counts[l.event] = (counts[l.event] ?? 0) + 1;
  const episode = Object.fromEntries(['split_started', 'split_over', 'retrying', 'retry_streak_over', 'learned_max_body', 'dead_letters_written'].map((e) => [e, counts[e] ?? 0]));
  // The outage's 503s are a retry streak of their own: one WARN, one end; no 413 in it.
  const streak = outage ? 1 : 0;
  expect(episode).toEqual({ split_started: 1, split_over: 1, retrying: streak, retry_streak_over: streak, learned_max_body: 0, dead_letters_written: 0 });
  for (const r of logs.filter((l) => l.event === 'retrying')) expect(r.reason).toBe('5xx');
  for (const r of logs.filter((l) => l.event === 'retry_streak_over')) expect(Object.keys(r.by_reason as object)).toEqual(['5xx']);

  const start = logs.find((l) => l.event === 'split_started')!;
  expect(start).toMatchObject({ level: 'warn', datasource: 'ev', status: 413, max_bytes: MAX_BATCH });
  expect(start.bytes).toBeGreaterThan(MAX_BODY);
  expect(start.learned_max_body).toBe(Math.floor((start.bytes as number) / 2));
  const end = logs.find((l) => l.event === 'split_over')!;
  expect(end).toMatchObject({ level: 'info', outcome: 'done', answers_413: answers413, lines_dead_lettered: 0, learned_max_body: learned });
  expect(logs.indexOf(start)).toBeLessThan(logs.indexOf(end));
  return { end, answers413, lines };
}

describe('413 split logging', () => {
  it('a backlog read from the spool: one WARN at the first 413, one event when the cut batches are resolved; nothing per request', async () => {
    const { end, answers413, lines } = await run(false);
    // Fresh batches are the episode's only by a 413 of their own; those formed before it and sent after are cut first.
    expect(end.batches).toBeGreaterThanOrEqual(1);
    expect(end.batches).toBeLessThanOrEqual(answers413);
    // The cut batches' lines: more than fit in one body, at most all of them.
    expect(end.lines_acked).toBeGreaterThan(MAX_BODY / 200);
    expect(end.lines_acked).toBeLessThanOrEqual(lines.length);
  });

  it('queued batches replayed after an outage, each cut by 413s of its own: still one episode, and the outage one retry streak', async () => {
    const { end, answers413 } = await run(true);
    // Each queued batch is sent whole first: a 413 each, and its halves' 413s.
    expect(end.batches).toBeGreaterThanOrEqual(3);
    expect(answers413).toBeGreaterThanOrEqual(2 * 3);
    expect(end.lines_acked).toBeGreaterThanOrEqual(3 * Math.floor(MAX_BATCH / 200));
  });
});
