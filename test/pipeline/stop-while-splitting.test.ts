// A graceful stop while a batch is being cut by 400s: pieces acknowledged
// before the stop are never sent again (SPEC section 3: a graceful stop
// creates no duplicates unless a request is unanswered when
// shutdown_timeout_ms runs out). What is not resolved yet waits in the disk
// queue as pieces of their own and arrives once after the next start.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Fault } from '../../src/emulator/types.js';
import { readQueueRecords } from '../../src/report/queue-reader.js';
import { decodeBody } from '../../src/codec/index.js';
import { reformBatch } from '../../src/recovery/reform.js';
import { RetryQueue } from '../../src/queue/retry-queue.js';
import { relocateFiles } from '../../src/spool/relocate.js';
import { StateStore } from '../../src/state/store.js';
import { configFor, expectExactlyOnce, gauge, jsonLines, rows, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines, type Running } from './helpers.js';

const REJECT: Fault = { kind: 'reject_marker', marker: 'POISON' };
const POISON_AT = [1900, 1500, 1100, 700, 300, 40];

/**
 * One batch of 2,000 good lines and 6 the emulator rejects. Every answer
 * takes 60 ms: isolating the 6 takes ~60 requests, one after the other. The
 * stop allows 1.5 s, of which a quarter is kept for writing state: the pieces
 * left are queued then.
 */
async function fixture(prefix: string, faults: Fault[]) {
  const dir = await tempDir();
  const emu = await startEmu(dir, { latencyMs: 60 });
  emu.setFaults(faults);
  const good = jsonLines(prefix, 0, 2000);
  const lines = [...good];
  for (const at of POISON_AT) lines.splice(at, 0, `{"id":"POISON-${at}"}`);
  await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
  const config = configFor(dir, emu, { batch: { max_bytes: 1_000_000, linger_ms: 50 }, shutdown_timeout_ms: 1500 });
  const stored = () => rows(emu, dir, 'ev');
  /** Dead letters of the rejected lines on disk (some isolated before the stop, the rest after). */
  const deadLetters = () => {
    const f = path.join(dir, 'state', 'dead-letter', 'ev.ndjson');
    return existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter((l) => l.includes('POISON')) : [];
  };
  /** Some pieces are acknowledged, the bisection goes on; then every answer is 403 (nothing stored): the budget parks, so no request is on the wire when the stop comes. */
  const parkThenStop = async (agent: Running) => {
    await waitFor(() => stored().length >= 300, 'first pieces stored');
    emu.setFaults([{ kind: 'status', status: 403 }]);
    await waitFor(() => agent.agent.readiness().reasons.includes('token_rejected'), 'parked on the 403');
    await agent.stop();
    expect(stored().length).toBeLessThan(good.length);
    // The cut batch is gone for good: the sender keeps no history of it (each such id used to stay for the process's life).
    const sender = (agent.agent as unknown as { sender: { deliveries: { histories: Map<number, unknown> } } }).sender;
    expect([...sender.deliveries.histories.keys()], 'histories left after the pieces were queued').toEqual([]);
    // The pieces are queued; their batch's attempts and last answer (a 200 of another piece) are not theirs.
    const queued = (await readQueueRecords(path.join(dir, 'state', 'queue'))).map((r) => r.header!);
    expect(queued.length).toBeGreaterThan(0);
    expect(queued.reduce((n, h) => n + h.lines, 0)).toBeLessThan(lines.length - 300);
    expect(queued.map((h) => h.history)).toEqual(queued.map(() => undefined));
    // Each piece's recorded file ranges read again exactly its lines (what a damaged queue record is re-read from).
    expect(await piecesReformed(path.join(dir, 'state'))).toEqual(queued.length);
    emu.setFaults([REJECT]);
  };
  /** Start again: every good line arrives once, each rejected line is one dead letter. */
  const restartAndCheck = async () => {
    const second = await startAgent(config);
    await waitForRows(emu, dir, 'ev', good, 'every good line', { timeoutMs: 60_000 });
    await waitFor(() => deadLetters().length >= POISON_AT.length, 'six dead letters');
    await second.stop();
    expectExactlyOnce(stored(), good);
    expect(deadLetters().map((l) => (JSON.parse(l) as { line: string }).line).sort()).toEqual(POISON_AT.map((n) => `{"id":"POISON-${n}"}`).sort());
  };
  return { config, stored, setFaults: (list: Fault[]) => emu.setFaults(list), parkThenStop, restartAndCheck };
}

/** How many queued batches' bodies equal what their recorded ranges re-form (fails on the first that does not). */
async function piecesReformed(stateDir: string): Promise<number> {
  const store = await StateStore.open({ stateDir, now: () => Date.now(), onBackgroundError: (err) => { throw err; }, relocate: relocateFiles });
  const queue = await RetryQueue.open(path.join(stateDir, 'queue'), 1 << 30, () => undefined);
  try {
    let n = 0;
    for (const r of await readQueueRecords(path.join(stateDir, 'queue'))) {
      const rec = (await queue.readRecord({ seg: r.seg, off: r.off }))!;
      const sent = await decodeBody(rec.header.encoding ?? undefined, rec.body);
      const ranges = store.queuedIntents().find((q) => q.id === rec.header.id)!.ranges;
      expect((await reformBatch(ranges, (k) => store.metaOf(k)?.path)).body.toString()).toBe(sent.toString());
      n++;
    }
    return n;
  } finally {
    await queue.close();
    await store.close();
  }
}

describe('a graceful stop during a 400 bisection', () => {
  it('sends no acknowledged piece again after the restart; every good line arrives once, the rejected lines are dead letters', async () => {
    const f = await fixture('g', [REJECT]);
    await f.parkThenStop(await startAgent(f.config));
    await f.restartAndCheck();
  });

  it('the same for a batch sent from the disk queue: its record goes, the pieces left are queued anew', async () => {
    // An outage first: the batch moves to the disk queue after its quick attempts.
    const f = await fixture('q', [{ kind: 'status', status: 503 }]);
    const first = await startAgent(f.config);
    await waitFor(async () => (await gauge(first.agent, 'spoolship_queue_batches')) >= 1, 'batch queued during the outage');
    // The outage ends: the queued batch is sent and cut by 400s.
    f.setFaults([REJECT]);
    await f.parkThenStop(first);
    await f.restartAndCheck();
  });

  it('with answers still coming, the stop starts no piece it could not wait for: nothing is cut, nothing sent twice', async () => {
    const f = await fixture('w', [REJECT]);
    const first = await startAgent(f.config);
    await waitFor(() => f.stored().length >= 300, 'first pieces stored');
    // The bisection is still running (one request after another) when the stop comes.
    await first.stop();
    expect(await first.agent.metrics.registry.getSingleMetricAsString('spoolship_requests_total')).toMatch(/status="error"\} 0$/m);
    expect(f.stored().length).toBeLessThan(2000);
    await f.restartAndCheck();
  });
});
