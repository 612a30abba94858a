// dead-letter replay reads the store as a stream, a window at a time, and
// takes its request slots from the same budget as `run` (Redis included).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayDeadLetters } from '../../src/deadletter/replay.js';
import type { LineResult, LineSender, StopReason } from '../../src/deadletter/replay-sender.js';
import { budgetKey } from '../../src/sender/redis-limiter.js';
import { RedisServer } from '../fleet/redis-server.js';
import { startEmu, tempDir } from '../pipeline/helpers.js';
import { dlInput, runCli, writeConfig, writeDeadLetters } from './helpers.js';

/** Rejects every line again; records what the live file held at each send. */
class RejectingSender implements LineSender {
  stopReason: StopReason | null = null;
  readonly liveAtSend: number[] = [];
  constructor(private readonly liveFile: string) {}
  async send(_ds: string, lines: readonly Buffer[]): Promise<LineResult[]> {
    let n = 0;
    try {
      n = readFileSync(this.liveFile, 'utf8').split('\n').filter(Boolean).length;
    } catch {
      n = 0;
    }
    this.liveAtSend.push(n);
    return lines.map(() => ({ kind: 'rejected', reason: 'rejected', status: 400 }));
  }
  stop(reason: StopReason): void {
    this.stopReason = reason;
  }
  async close(): Promise<void> {}
}

describe('dead-letter replay: streaming and the shared budget', () => {
  it('works through the store a window at a time: records that stay are back in the live file before later windows are sent', async () => {
    const dir = await tempDir();
    const state = path.join(dir, 'state');
    const lines = Array.from({ length: 40 }, (_, i) => JSON.stringify({ n: i, pad: 'x'.repeat(80) }));
    const live = await writeDeadLetters(state, 'app.ndjson', lines.map((l) => dlInput('app', l)));
    const sender = new RejectingSender(live);
    // One batch of ~1 KB in flight: a window is about 1 KB of records, so 40 records of ~300 bytes take many windows.
    const sum = await replayDeadLetters({ dir: path.dirname(live), filter: {}, maxBatchBytes: 1024, concurrency: 1, sender, now: () => new Date() });
    expect(sum).toMatchObject({ selected: 40, rejected: 40, acknowledged: 0, remaining: 40 });
    expect(sender.liveAtSend.length).toBeGreaterThan(5);
    // Each window's kept records were appended before the next window was sent.
    expect(sender.liveAtSend[0]).toBe(0);
    expect(sender.liveAtSend.at(-1)).toBeGreaterThan(0);
    expect([...sender.liveAtSend].sort((a, b) => a - b)).toEqual(sender.liveAtSend);
    // Every record is kept once, in order, with the new answer.
    const kept = readFileSync(live, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { line: string });
    expect(kept.map((k) => k.line)).toEqual(lines);
  });

  describe('with limits.redis_url', () => {
    let redis: RedisServer;
    beforeAll(async () => {
      redis = await RedisServer.start();
    });
    afterAll(async () => {
      await redis?.destroy();
    });

    it("takes its request slots from the fleet's budget in Redis", async () => {
      const dir = await tempDir();
      const emu = await startEmu(dir);
      const state = path.join(dir, 'state');
      await writeDeadLetters(state, 'app.ndjson', [dlInput('app', '{"a":1}'), dlInput('app', '{"a":2}')]);
      const cfg = await writeConfig(dir, emu, { limits: { redis_url: redis.url, budget_id: 'replay-budget' } });
      const client = new Redis(redis.url);
      try {
        expect(await client.exists(budgetKey('replay-budget'))).toBe(0);
        const r = await runCli(['dead-letter', 'replay', '-c', cfg, '--json'], dir);
        expect(r.code, r.stderr).toBe(0);
        expect(JSON.parse(r.stdout)).toMatchObject({ selected: 2, acknowledged: 2, remaining: 0 });
        expect(await client.exists(budgetKey('replay-budget'))).toBe(1);
      } finally {
        client.disconnect();
      }
    });
  });
});
