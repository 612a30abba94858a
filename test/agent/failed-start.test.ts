// A start that fails late must release every part it had started, last
// first (src/agent/lifecycle.ts): a SIGHUP reload that fails, or a test
// harness, must not keep the Redis budget's connection, the queue replayer,
// the HTTP client or the state_dir lock of the attempt.
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { RedisServer } from '../fleet/redis-server.js';
import { configFor, jsonLines, onCleanup, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines } from '../pipeline/helpers.js';

async function connectedClients(redis: RedisServer): Promise<number> {
  const info = (await redis.command('INFO', 'clients')) ?? '';
  return Number(/connected_clients:(\d+)/.exec(info)?.[1]);
}

describe('a start that fails late', () => {
  it('releases the Redis connection and the state_dir lock; the next start works and ships', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const redis = await RedisServer.start();
    onCleanup(() => redis.destroy());
    const config = configFor(dir, emu, { limits: { redis_url: redis.url, budget_id: 'failed-start' } });
    // The control channel is the last part to start: a directory where its
    // socket goes makes it fail after the budget, client, queue and replayer are up.
    const socketPath = path.join(config.state_dir, 'control.sock');
    await mkdir(socketPath, { recursive: true });
    const lines = jsonLines('a', 0, 10);
    await writeLines(path.join(config.spool.dir, 'events', 'a.ndjson'), lines);

    // INFO's own connection is the one client left when the agent let go of its own.
    // The control socket's own failure (its path is a directory), not an earlier one.
    await expect(Agent.start(config, { log: pino({ level: 'silent' }), rescanMs: 50 })).rejects.toThrow(socketPath);
    await waitFor(async () => (await connectedClients(redis)) === 1, 'the failed start to close its Redis connection', 10_000);

    await rm(socketPath, { recursive: true });
    await startAgent(config); // the lock was released
    await waitForRows(emu, dir, 'events', lines, 'the 10 lines to arrive');
  });
});

describe('StartedParts', () => {
  it('ends the parts last started first, each once, and one that fails does not stop the others', async () => {
    const { StartedParts, partOf } = await import('../../src/agent/lifecycle.js');
    const parts = new StartedParts();
    const ended: string[] = [];
    const part = (name: string, fail = false) =>
      partOf(
        () => ended.push(`close ${name}`),
        async (err) => {
          ended.push(`destroy ${name} (${String(err)})`);
          if (fail) throw new Error('destroy failed');
        },
      );
    parts.add('lock', part('lock'));
    parts.add('queue', part('queue', true));
    parts.add('client', part('client'));
    const failures = await parts.unwind({ destroy: 'start failed' });
    expect(ended).toEqual(['destroy client (start failed)', 'destroy queue (start failed)', 'destroy lock (start failed)']);
    expect(failures.map((f) => [f.name, String(f.err)])).toEqual([['queue', 'Error: destroy failed']]);
    expect(await parts.unwind('close')).toEqual([]); // each part once
    expect(ended).toHaveLength(3);
    parts.add('admin', part('admin'));
    await parts.unwind('close');
    expect(ended.at(-1)).toBe('close admin');
  });
});
