// start_at: end begins each file found at start-up at its end, taken in the
// first scan. That scan ran after `started` was logged (Agent.start
// resolved), so lines a writer appended (or a file it created) in the few
// milliseconds after were skipped as "existing data".
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { Spooler } from '../../src/spool/spooler.js';
import { STATE_DIR_CHECK_MS } from '../../src/state/dir-watch.js';
import { LOCK_FILE } from '../../src/state/lock.js';
import { ManualClock } from '../support/manual-clock.js';
import { configFor, expectExactlyOnce, onCleanup, rows, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines } from './helpers.js';

describe('start_at: end', () => {
  it('ships every line written once the agent has started: appended to a file found at start-up, or in a new file', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const d = path.join(dir, 'spool', 'ev');
    await writeLines(path.join(d, 'a.ndjson'), ['{"old":1}', '{"old":2}']);
    const { stop } = await startAgent(configFor(dir, emu, { spool: { start_at: 'end' } }));
    // At once, synchronously: nothing of the agent runs in between.
    appendFileSync(path.join(d, 'a.ndjson'), '{"a":1}\n');
    mkdirSync(d, { recursive: true });
    writeFileSync(path.join(d, 'b.ndjson'), '{"b":1}\n');
    const expected = ['{"a":1}', '{"b":1}'];
    await waitForRows(emu, dir, 'ev', expected, 'the lines written after the start');
    await stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), expected);
    expect(rows(emu, dir, 'ev')).not.toContain('{"old":1}');
  });
});

describe('start_at: end, a fatal error during the first scan', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  async function starting(scan: () => Promise<void>, clock?: ManualClock) {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), ['{"old":1}']);
    const config = configFor(dir, emu, { spool: { start_at: 'end' } });
    const logs: Array<Record<string, unknown>> = [];
    const fatal: unknown[] = [];
    let scans = 0;
    vi.spyOn(Spooler.prototype, 'scan').mockImplementation(() => {
      scans++;
      return scan();
    });
    const started = Agent.start(config, {
      log: pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) }),
      clock,
      onFatal: (err) => fatal.push(err),
    });
    return { config, logs, fatal, started, scans: () => scans };
  }

  it('an unexpected error in the first scan is the fatal error: the start ends without logging started', async () => {
    const s = await starting(() => Promise.reject(new Error('scan broke')));
    const agent = await s.started;
    onCleanup(() => agent.destroy());
    expect(s.fatal.map((e) => (e as Error).message)).toEqual(['scan broke']);
    expect(s.logs.map((l) => l.event).filter((e) => e === 'fatal' || e === 'started')).toEqual(['fatal']);
  });

  it('a fatal error while the first scan runs ends the start at once, without logging started', async () => {
    const clock = new ManualClock();
    let endScan!: () => void;
    const s = await starting(() => new Promise<void>((resolve) => (endScan = resolve)), clock);
    await waitFor(() => s.scans() > 0, 'the first scan under way');
    // The state_dir's lock removed: found at the next check.
    await rm(path.join(s.config.state_dir, LOCK_FILE));
    clock.advance(STATE_DIR_CHECK_MS);
    // The scan never ends: only the fatal error can end the start.
    const agent = await s.started;
    onCleanup(async () => {
      endScan();
      await agent.destroy();
    });
    expect(s.fatal).toHaveLength(1);
    expect(s.logs.map((l) => l.event).filter((e) => e === 'state_dir_lost' || e === 'started')).toEqual(['state_dir_lost']);
  });
});
