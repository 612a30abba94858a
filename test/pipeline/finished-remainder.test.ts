// A file finished with a partial last line: the remainder went out as a whole
// line, with the newline the agent added (SPEC section 3, "Partial last
// line"). That newline is not in the file. When the file comes back under
// the patterns (moved away and back) and its writer goes on, reading resumes
// at the file's real end: nothing read twice (its end is not a truncation),
// no byte of the new lines skipped.
import { appendFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFor, expectExactlyOnce, jsonLines, rows, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines } from './helpers.js';

type Status = { datasources: Array<{ files: Array<{ path: string }> }> };

describe('a file finished with its remainder sent, then back under the patterns', () => {
  it.each(['while the agent runs', 'across a restart'] as const)('%s: the lines written after it arrive whole, nothing twice', async (when) => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const spool = path.join(dir, 'spool');
    const file = path.join(spool, 'ev', 'app.ndjson');
    const away = path.join(spool, 'ev', 'app.ndjson.away');
    const before = jsonLines('before', 0, 100);
    await writeLines(file, before);
    appendFileSync(file, '{"id":"half"}');
    const config = configFor(dir, emu, { spool: { idle_ms: 300 } });
    let running = await startAgent(config);
    await waitForRows(emu, dir, 'ev', before, 'the first 100 rows');
    renameSync(file, away);
    // Finished once idle for idle_ms after the move: its remainder is sent as a line.
    await waitForRows(emu, dir, 'ev', [...before, '{"id":"half"}'], 'the remainder as a whole line');
    const files = async () => ((await running.agent.status()) as Status).datasources.flatMap((d) => d.files.map((f) => f.path));
    if (when === 'across a restart') {
      await running.stop();
      renameSync(away, file);
      running = await startAgent(config);
    } else {
      renameSync(away, file);
    }
    // Seen at its name before it grows: its end is where reading stands, not a truncation.
    await waitFor(async () => (await files()).includes(file), 'the file seen at its name again');
    // The writer goes on after its unterminated line.
    const more = jsonLines('more', 0, 20);
    appendFileSync(file, `${more.join('\n')}\n`);
    const expected = [...before, '{"id":"half"}', ...more];
    await waitForRows(emu, dir, 'ev', expected, 'the new lines, whole and once');
    await running.stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), expected);
    expect(emu.stats().quarantined.ev ?? 0).toBe(0);
  });
});
