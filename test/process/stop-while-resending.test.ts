// SIGTERM while the start re-sends the batches a kill -9 left unanswered,
// during an outage with the disk queue full: the start waited for room in
// the pipeline that the outage never gave, and the stop waited for the
// start, so the process ignored SIGTERM for good (an audit saw it alive 595 s
// later). The stop must end the wait: exit 0 within shutdown_timeout_ms, the
// batches not re-sent yet stay in the journal, and the next start ships
// every line.
import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkDelivery, kill9, lines, spawnAgent, startEmu, tempDir, waitFor, waitForDelivery, writeConfig } from './helpers.js';

const SHUTDOWN_MS = 3000;

describe('a stop while the start re-sends unanswered batches (process)', () => {
  it('SIGTERM during an outage with the queue full, while the start waits for room: exit 0 within shutdown_timeout_ms; the next start ships every line', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir, { faults: [{ kind: 'status', status: 503 }] });
    const cfg = await writeConfig(dir, t, {
      batch: { max_bytes: 60_000, linger_ms: 200 },
      compression: { codec: 'none' },
      queue: { max_bytes: '900KB' },
      retry: { initial_ms: 200, max_ms: 1000 },
      shutdown_timeout_ms: SHUTDOWN_MS,
    });
    const per = 16_000;
    for (const ds of ['app', 'web']) {
      mkdirSync(path.join(cfg.spoolDir, ds), { recursive: true });
      appendFileSync(path.join(cfg.spoolDir, ds, 'a.ndjson'), lines(ds[0]!, 0, per));
    }
    const first = spawnAgent(cfg.configFile);
    await first.started;
    await waitFor(() => first.logs.some((l) => l.event === 'queue_full'), 'the queue full', 30_000);
    // Batches beyond the queue wait in memory: journal intents, unanswered.
    await waitFor(async () => ((await fetch(`${(await first.started)!}/status`).then((r) => r.json())) as { in_flight: number }).in_flight > 0, 'batches in memory', 20_000);
    await kill9(first);
    const second = spawnAgent(cfg.configFile);
    await waitFor(() => second.logs.some((l) => l.event === 'resending_unacknowledged'), 'the start re-sending', 20_000);
    await waitFor(() => t.records.length > 0 && t.inFlight() === 0, 'the re-sent batches answered 503 at least once', 20_000);
    const at = Date.now();
    second.child.kill('SIGTERM');
    const exit = await Promise.race([second.exited, new Promise<null>((r) => setTimeout(() => r(null), SHUTDOWN_MS + 7000))]);
    if (!exit) second.child.kill('SIGKILL');
    expect(exit?.code, `exit 0 within shutdown_timeout_ms of the SIGTERM (log: ${JSON.stringify(second.logs.slice(-5).map((l) => l.event))})`).toBe(0);
    expect(exit!.at - at).toBeLessThan(SHUTDOWN_MS + 5000);
    expect(second.logs.filter((l) => l.event === 'fatal')).toEqual([]);
    t.emu.setFaults([]);
    const third = spawnAgent(cfg.configFile);
    await third.started;
    for (const ds of ['app', 'web']) await waitForDelivery(t, ds, ds[0]!, per, `all of ${ds}`, { timeoutMs: 60_000, duplicates: 'allow' });
    third.child.kill('SIGTERM');
    expect((await third.exited).code).toBe(0);
    for (const ds of ['app', 'web']) expect((await checkDelivery(t, ds, ds[0]!, per)).missing).toBe(0);
  }, 150_000);
});
