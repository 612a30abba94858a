// The whole agent on a manual clock: its timing rules (here linger_ms and
// the checkpoint's period) move when the test moves time, whatever the
// machine's load. Each "not yet" is read from the agent's own /status right
// after the clock's due timers ran, not from a sleep.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Agent } from '../../src/agent/agent.js';
import { CHECKPOINT_EVERY_MS } from '../../src/state/acker.js';
import { ManualClock } from '../support/manual-clock.js';
import { configFor, jsonLines, rows, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines } from './helpers.js';

/** Let the timers the clock just released run (they only start async work). */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
}

async function status(agent: Agent): Promise<{ batches_active: number; datasources: Array<{ datasource: string; lines_read: number; lines_acked: number }> }> {
  return (await agent.status()) as never;
}

const linesRead = async (agent: Agent) => (await status(agent)).datasources.find((d) => d.datasource === 'ev')?.lines_read ?? 0;

describe('the agent on a manual clock', () => {
  it('a partial batch waits for linger_ms on the clock, then goes; the checkpoint follows its own period', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const clock = new ManualClock(Date.now());
    const config = configFor(dir, emu, { batch: { linger_ms: 1000 } });
    const file = path.join(config.spool.dir, 'ev', 'a.ndjson');
    await writeLines(file, jsonLines('a', 0, 10));
    const { agent } = await startAgent(config, { clock });

    // Read (the first scan needs no time), and held open: nothing was sent.
    await waitFor(async () => (await linesRead(agent)) === 10, '10 lines read');
    clock.advance(999);
    await settle();
    expect((await status(agent)).batches_active, 'no batch closed before linger_ms').toBe(0);
    expect(emu.requests()).toHaveLength(0);

    // The next tick after linger_ms closes it.
    clock.advance(100);
    // The emulator stores the rows before it records the request: wait for both.
    await waitForRows(emu, dir, 'ev', jsonLines('a', 0, 10), 'the batch after linger_ms');
    await waitFor(() => emu.requests().length > 0, 'the request recorded');
    expect(emu.requests()).toHaveLength(1);

    // The first checkpoint after journaling came at once; the next one only
    // when CHECKPOINT_EVERY_MS has passed on the clock.
    const checkpoint = path.join(config.state_dir, 'checkpoint.json');
    const committed = () => (JSON.parse(readFileSync(checkpoint, 'utf8').split('\n')[0]!) as { files: Array<{ committed: number }> }).files[0]?.committed ?? 0;
    await waitFor(async () => (await status(agent)).datasources[0]?.lines_acked === 10, 'the ack recorded');
    const size = readFileSync(file).length;
    await writeLines(file, jsonLines('b', 0, 5));
    // Found by the directory watch, or else by the rescan, which runs on the
    // clock too (every 50 ms here: startAgent's rescanMs).
    let rescanned = 0;
    await waitFor(async () => {
      if ((await linesRead(agent)) === 15) return true;
      // Well below the checkpoint period, which the end of this test needs.
      if (rescanned < 2000) {
        clock.advance(50);
        rescanned += 50;
      }
      return false;
    }, '5 more lines read');
    clock.advance(1100);
    await waitForRows(emu, dir, 'ev', [...jsonLines('a', 0, 10), ...jsonLines('b', 0, 5)], 'the second batch');
    await waitFor(async () => (await status(agent)).datasources[0]?.lines_acked === 15, 'its ack recorded');
    clock.advance(100);
    await settle();
    expect(committed(), 'the second batch not checkpointed before the period').toBeLessThanOrEqual(size);
    clock.advance(CHECKPOINT_EVERY_MS);
    await waitFor(() => committed() === readFileSync(file).length, 'a checkpoint with the second batch committed');
  });
});
