// SPEC section 4, the 413 row: whatever the rejected size, a 413 cuts the
// batch into pieces of at most half of it and lowers the learned limit; a
// single line still too large goes to dead letters (line_too_long). A 413
// for a body under 64 KiB used to park the budget (unexpected_response)
// instead, so an emulator with a small --max-body stopped the agent.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFor, expectExactlyOnce, gauge, jsonLines, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines } from './helpers.js';

describe('a small body limit (emulator --max-body 1000)', () => {
  it('cuts batches to fit, dead-letters the one line too large as line_too_long, and never parks', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { maxBody: 1000 });
    const before = jsonLines('a', 0, 40, 40);
    const long = JSON.stringify({ id: 'long', pad: 'y'.repeat(2000) });
    const after = jsonLines('b', 0, 40, 40);
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), [...before, long, ...after]);
    const { agent, stop } = await startAgent(configFor(dir, emu, { batch: { linger_ms: 50 } }));
    expectExactlyOnce(await waitForRows(emu, dir, 'ev', [...before, ...after], 'every line but the long one'), [...before, ...after]);
    await waitFor(async () => (await gauge(agent, 'spoolship_lines_dead_lettered_total', '{datasource="ev",reason="line_too_long"}')) === 1, 'the long line dead-lettered');
    for (const reason of ['unexpected_response', 'bad_request']) expect(await gauge(agent, 'spoolship_parked', `{reason="${reason}"}`), reason).toBe(0);
    expect(await gauge(agent, 'spoolship_learned_max_body_bytes')).toBeLessThanOrEqual(1000);
    await stop();
    const dl = readFileSync(path.join(dir, 'state', 'dead-letter', 'ev.ndjson'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { reason: string; line: string });
    expect(dl.map((r) => [r.reason, r.line])).toEqual([['line_too_long', long]]);
  });
});
