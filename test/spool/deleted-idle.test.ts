// A deleted file is read until it has not grown for idle_ms, counted from its
// last write (docs/spool.md): one its writer had left long before is finished
// at once, even when the agent read its bytes only just now (a backlog). An
// audit saw it kept for idle_ms after the agent's first read instead.
import { rm, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manual-clock.js';
import { setup } from './helpers.js';

const IDLE_MS = 60_000;

describe('a deleted file whose writer left long ago', () => {
  it('is finished at once, its partial last line sent whole, though the agent read it just now', async () => {
    const clock = new ManualClock();
    const s = await setup({}, { clock, idleMs: IDLE_MS, forgetAfterMs: 600_000 });
    const app = path.join(s.spool, 'ev', 'app.ndjson');
    await writeFile(app, '{"a":1}\n{"b":"partial"}');
    // Last written 10 minutes ago.
    const old = new Date(Date.now() - 10 * IDLE_MS);
    await utimes(app, old, old);
    await s.spooler.scan();
    await s.readAll();
    await rm(app);
    await s.spooler.scan();
    await s.readAll();
    expect(s.closed.map((x) => x.body.toString()).join('')).toBe('{"a":1}\n{"b":"partial"}\n');
  });

  it('one written just now waits for idle_ms on the clock', async () => {
    const clock = new ManualClock();
    const s = await setup({}, { clock, idleMs: IDLE_MS, forgetAfterMs: 600_000 });
    const app = path.join(s.spool, 'ev', 'app.ndjson');
    await writeFile(app, '{"a":1}\n{"b":"partial"}');
    await s.spooler.scan();
    await s.readAll();
    await rm(app);
    await s.spooler.scan();
    await s.readAll();
    expect(s.closed.map((x) => x.body.toString()).join('')).toBe('{"a":1}\n');
    clock.advance(IDLE_MS);
    await s.readAll();
    expect(s.closed.map((x) => x.body.toString()).join('')).toBe('{"a":1}\n{"b":"partial"}\n');
  });
});
