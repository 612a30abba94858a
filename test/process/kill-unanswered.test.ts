// kill -9 while batches are unanswered (SPEC section 3): the server failing
// (hanging, 503, resetting) when the agent dies, then a restart against a
// healthy server. Every line arrives, and none twice: nothing was stored
// before the kill. The seeded kill tests kill beside a healthy server that
// stores whatever is in flight, so a checkpoint taken before the
// acknowledgement lost nothing visible there; here it loses the batches
// (seen failing with completeBatch moved before deliver in the pipeline:
// 2,000 of 2,000 lines missing).
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Fault } from '../../src/emulator/types.js';
import { checkDelivery, errorsIn, kill9, lines, metric, sleep, spawnAgent, startEmu, tempDir, waitFor, writeConfig } from './helpers.js';

const LINES = 2000;
/**
 * SPEC section 3: acknowledgements reach the disk within 100 ms. Waited out
 * before the kill so that an acknowledgement written too early (before the
 * server answered) is on disk when the agent dies and shows as lost lines.
 */
const GROUP_COMMIT_SETTLE_MS = 300;

/**
 * Each mode keeps the batch in memory, unanswered or waiting for its next
 * attempt, at the kill (a batch already in the disk queue is safe however
 * early its checkpoint came): a hung request, a 503 asking for 30 s, and
 * resets with retries far apart.
 */
const modes: Array<[string, Fault, number | 'hang' | 'reset', Record<string, unknown>]> = [
  ['hanging', { kind: 'hang', p: 1 }, 'hang', {}],
  ['answering 503 with Retry-After', { kind: 'status', status: 503, retry_after: 30, p: 1 }, 503, {}],
  ['resetting connections', { kind: 'reset', p: 1 }, 'reset', { retry: { initial_ms: 30_000, max_ms: 30_000 } }],
];

describe('kill -9 while batches are unanswered (process)', () => {
  it.each(modes)('a server %s at the kill: after a restart every line arrives once', async (_name, fault, outcome, config) => {
    const dir = await tempDir();
    const t = await startEmu(dir, { faults: [fault] });
    const paths = await writeConfig(dir, t, config);
    const file = path.join(paths.spoolDir, 'ev', 'app.ndjson');
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, lines('u', 0, LINES));
    const first = spawnAgent(paths.configFile);
    await first.started;
    await waitFor(() => t.records.some((r) => r.outcome === outcome), `a request ${_name}`);
    await sleep(GROUP_COMMIT_SETTLE_MS);
    const storedBefore = (await checkDelivery(t, 'ev', 'u', LINES)).rows;
    await kill9(first);
    t.emu.setFaults([]);
    const second = spawnAgent(paths.configFile);
    const admin = (await second.started)!;
    // Nothing behind and nothing queued: the agent believes everything
    // arrived (also when it wrongly does).
    await waitFor(
      async () => (await metric(admin, 'spoolship_behind_bytes')) === 0 && (await metric(admin, 'spoolship_queue_batches')) === 0,
      'the agent to have nothing behind or queued',
    );
    const result = await checkDelivery(t, 'ev', 'u', LINES);
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    expect(storedBefore, 'the failing server stored nothing').toBe(0);
    expect({ missing: result.missing, firstMissing: result.firstMissing, duplicates: result.duplicates, unexpected: result.unexpected }, 'every line once: the batches unanswered at the kill were sent again').toEqual({
      missing: 0,
      firstMissing: [],
      duplicates: 0,
      unexpected: 0,
    });
    expect(errorsIn(second)).toEqual([]);
  });
});
