// A SIGHUP reload with a changed config stops the old pipeline and starts a
// new one on the same state_dir. Its lock stays held in between: the old
// agent hands it over (Agent.takeLock) instead of releasing it, so a second
// `spoolship run` started in that moment cannot take the state_dir (SPEC
// section 3: a second agent must never ship the same files alongside it).
import pino from 'pino';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { acquireLock } from '../../src/state/lock.js';
import { StateLockedError } from '../../src/errors.js';
import { configFor, onCleanup, startEmu, tempDir, waitForRows, writeLines } from '../pipeline/helpers.js';

/** What a second starter on the state_dir gets now: 'refused', or 'taken' (and it lets go again). */
async function secondStarter(stateDir: string): Promise<'refused' | 'taken'> {
  try {
    const lock = await acquireLock(stateDir, { pid: 1 });
    await lock.release();
    return 'taken';
  } catch (err) {
    if (err instanceof StateLockedError) return 'refused';
    throw err;
  }
}

describe('the state_dir lock across a reload', () => {
  it('is never free between the old agent and the new one, and is released at the end', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const stateDir = path.join(dir, 'state');
    const log = pino({ level: 'silent' });
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), ['{"a":1}']);
    const old = await Agent.start(configFor(dir, emu), { log, rescanMs: 50 });
    onCleanup(() => old.close());
    await waitForRows(emu, dir, 'ev', ['{"a":1}'], 'the first line');
    await old.close({ forReload: true });
    expect(await secondStarter(stateDir), 'between the two pipelines').toBe('refused');
    const lock = old.takeLock();
    expect(lock).not.toBeNull();
    const next = await Agent.start(configFor(dir, emu, { batch: { linger_ms: 20 } }), { log, rescanMs: 50, stateLock: lock! });
    onCleanup(() => next.close());
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), ['{"a":2}']);
    await waitForRows(emu, dir, 'ev', ['{"a":1}', '{"a":2}'], 'a line through the new pipeline');
    await next.close();
    // The new agent was handed the lock: its stop leaves it to the caller.
    expect(await secondStarter(stateDir), 'after the new agent stopped').toBe('refused');
    expect(next.takeLock()).toBeNull();
    await lock!.release();
    expect(await secondStarter(stateDir), 'once the caller released it').toBe('taken');
  });
});
