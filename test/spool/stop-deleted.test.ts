// A stop while a deleted file still ends in a partial line (it is being read
// until idle: its writer may still finish the line): nobody can reopen the
// file after the restart, so the remainder goes now, whole (SPEC section 3:
// "when its file is ... deleted, the remainder is sent as one whole line").
// An audit: SIGTERM 1 s after the deletion lost it without a word.
import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { readWithPartialLine, sent, setup } from './helpers.js';

describe('a stop and a deleted file ending in a partial line', () => {
  it('sends the remainder whole at the stop, before the descriptor is closed', async () => {
    const s = await setup({}, { idleMs: 600_000 });
    await rm(await readWithPartialLine(s));
    await s.spooler.scan();
    await s.internals.readRound();
    await s.spooler.close();
    s.batcher.closeAll();
    expect(sent(s)).toBe('{"a":1}\n{"b":"partial"}\n');
  });

  it('also when no scan has seen the deletion yet', async () => {
    const s = await setup({}, { idleMs: 600_000 });
    await rm(await readWithPartialLine(s));
    await s.spooler.close();
    s.batcher.closeAll();
    expect(sent(s)).toBe('{"a":1}\n{"b":"partial"}\n');
  });

  it('a partial line of a file still there is kept for the next start, not sent', async () => {
    const s = await setup({}, { idleMs: 600_000 });
    await readWithPartialLine(s);
    await s.spooler.close();
    s.batcher.closeAll();
    expect(sent(s)).toBe('{"a":1}\n');
  });
});
