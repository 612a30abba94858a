// A deleted file is read until it has not grown for idle_ms, counted from its
// last write (docs/spool.md): one its writer had left long before is finished
// at once, even when the agent read its bytes only just now (a backlog). An
// audit saw it kept for idle_ms after the agent's first read instead.
import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manual-clock.js';
import { readWithPartialLine, sent, setup } from './helpers.js';

const IDLE_MS = 60_000;

/** A spooler on a manual clock set to wall time: a file's mtime is wall time. */
async function onWallTime() {
  const clock = new ManualClock(Date.now());
  return { clock, s: await setup({}, { clock, idleMs: IDLE_MS, forgetAfterMs: 600_000 }) };
}

describe('a deleted file whose writer left long ago', () => {
  it('is finished at once, its partial last line sent whole, though the agent read it just now', async () => {
    const { s } = await onWallTime();
    // Last written 10 minutes ago.
    await rm(await readWithPartialLine(s, new Date(Date.now() - 10 * IDLE_MS)));
    await s.spooler.scan();
    await s.readAll();
    expect(sent(s)).toBe('{"a":1}\n{"b":"partial"}\n');
  });

  it('one written just now waits for idle_ms on the clock', async () => {
    const { clock, s } = await onWallTime();
    await rm(await readWithPartialLine(s));
    await s.spooler.scan();
    await s.readAll();
    expect(sent(s)).toBe('{"a":1}\n');
    clock.advance(IDLE_MS);
    await s.readAll();
    expect(sent(s)).toBe('{"a":1}\n{"b":"partial"}\n');
  });
});
