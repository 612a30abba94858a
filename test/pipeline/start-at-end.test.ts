// start_at: end begins each file found at start-up at its end, taken in the
// first scan. That scan ran after `started` was logged (Agent.start
// resolved), so lines a writer appended (or a file it created) in the few
// milliseconds after were skipped as "existing data".
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFor, expectExactlyOnce, rows, startAgent, startEmu, tempDir, waitForRows, writeLines } from './helpers.js';

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
