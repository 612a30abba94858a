// A reader dead letter is written (fsync'd) before the file's state passes
// the line; a crash between the two (a kill -9 10-60 ms after the record,
// the journal's fsync) read the line again at the next start and wrote a
// second record of it. The state as that crash leaves it: the dead-letter
// records on disk, the state from before the lines were read (a copy of
// state_dir taken then, put back). The store recognises its own records of
// that window. And a too-long line lettered before its end stays a dead
// letter when the next start's max_line_bytes would take it (it was sent as
// a row too). The lines of a batch the platform rejected are the same case:
// their records are written before the state passes them.
import { existsSync, readFileSync } from 'node:fs';
import { appendFile, cp, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFor, gauge, jsonLines, rows, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines } from './helpers.js';

interface Letter {
  reason: string;
  file: string;
  offset: number;
  bytes: number;
  line: string;
}

function letters(dir: string): Letter[] {
  const f = path.join(dir, 'state', 'dead-letter', 'ev.ndjson');
  if (!existsSync(f)) return [];
  return readFileSync(f, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Letter);
}

/** A copy of state_dir as it is now (the agent stopped), but the dead letters and the lock. */
async function snapshotState(dir: string): Promise<string> {
  const snap = path.join(dir, 'state-snapshot');
  await cp(path.join(dir, 'state'), snap, { recursive: true, filter: (src) => !/[/\\](dead-letter|lock)/.test(path.relative(dir, src).slice('state'.length)) });
  return snap;
}

/** state_dir as the snapshot has it, with the dead letters written since: a crash after their records, before the state passed their lines. */
async function crashedAfterTheRecords(dir: string, snap: string): Promise<void> {
  const state = path.join(dir, 'state');
  for (const name of await readdir(state)) if (name !== 'dead-letter') await rm(path.join(state, name), { recursive: true, force: true });
  await cp(snap, state, { recursive: true });
}

describe('dead letters across a restart', () => {
  it('a line read again at the next start is not written to the dead letters twice (invalid_json, line_too_long)', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const config = configFor(dir, emu, { validate: 'json', spool: { max_line_bytes: 2000 } });
    const file = path.join(dir, 'spool', 'ev', 'a.ndjson');
    const good = [...jsonLines('a', 0, 20), ...jsonLines('a', 20, 20)];
    await writeLines(file, jsonLines('a', 0, 20));
    const first = await startAgent(config);
    await waitForRows(emu, dir, 'ev', jsonLines('a', 0, 20), 'the first lines');
    await first.stop();
    const snap = await snapshotState(dir);
    await writeLines(file, ['not json', 'y'.repeat(3000), ...jsonLines('a', 20, 20)]);
    const second = await startAgent(config);
    await waitForRows(emu, dir, 'ev', good, 'the good lines');
    await waitFor(() => letters(dir).length === 2, 'both dead letters');
    await second.stop();
    const before = letters(dir);
    expect(before.map((l) => l.reason)).toEqual(['invalid_json', 'line_too_long']);

    await crashedAfterTheRecords(dir, snap);
    const newLineAt = (await stat(file)).size;
    await appendFile(file, 'also not json\n');
    const third = await startAgent(config);
    await waitForRows(emu, dir, 'ev', good, 'the good lines again', { duplicates: 'allow' });
    // The new bad line after the old ones: once it is stored, the old ones were read again.
    await waitFor(() => letters(dir).length >= 3, 'the new dead letter');
    await third.stop();
    const after = letters(dir);
    expect(after.map(({ reason, offset, line }) => ({ reason, offset, line: line.slice(0, 20) }))).toEqual([
      ...before.map(({ reason, offset, line }) => ({ reason, offset, line: line.slice(0, 20) })),
      { reason: 'invalid_json', offset: newLineAt, line: 'also not json' },
    ]);
  });

  it('the lines of a batch the platform rejected (400), sent again after a crash before the state passed them, keep their one record each', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { faults: [{ kind: 'reject_marker', marker: 'BAD' }] });
    const config = configFor(dir, emu, { compression: { codec: 'none' } });
    const file = path.join(dir, 'spool', 'ev', 'a.ndjson');
    await writeLines(file, jsonLines('a', 0, 10));
    const first = await startAgent(config);
    await waitForRows(emu, dir, 'ev', jsonLines('a', 0, 10), 'the first lines');
    await first.stop();
    const snap = await snapshotState(dir);
    // Both bad lines in one half of the batch (bad lines in both halves of the first split park the Data Source).
    await writeLines(file, [...jsonLines('a', 10, 20), '{"n":"BAD-1"}', '{"n":"BAD-2"}']);
    const second = await startAgent(config);
    await waitForRows(emu, dir, 'ev', jsonLines('a', 0, 30), 'the good lines');
    await waitFor(() => letters(dir).length === 2, 'both dead letters');
    await second.stop();
    const before = letters(dir);
    expect(before.map((l) => ({ reason: l.reason, line: l.line }))).toEqual([
      { reason: 'rejected', line: '{"n":"BAD-1"}' },
      { reason: 'rejected', line: '{"n":"BAD-2"}' },
    ]);

    await crashedAfterTheRecords(dir, snap);
    const third = await startAgent(config);
    // Rejected again, and dead-lettered (counted) again: their records are those already there.
    await waitFor(async () => (await gauge(third.agent, 'spoolship_lines_dead_lettered_total', '{datasource="ev",reason="rejected"}')) === 2, 'the bad lines rejected again');
    await third.stop();
    expect(letters(dir)).toEqual(before);
  });

  it('a too-long line lettered before its end, then read again whole at the next start, keeps its one record', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const config = configFor(dir, emu, { validate: 'json', spool: { max_line_bytes: 2000 } });
    const file = path.join(dir, 'spool', 'ev', 'a.ndjson');
    await writeLines(file, jsonLines('a', 0, 10));
    const first = await startAgent(config);
    await waitForRows(emu, dir, 'ev', jsonLines('a', 0, 10), 'the lines before it');
    await first.stop();
    const snap = await snapshotState(dir);
    await appendFile(file, 'x'.repeat(5000));
    const second = await startAgent(config);
    await waitFor(() => letters(dir).length === 1, 'its record while the line is unfinished');
    await second.stop();
    expect(letters(dir).map(({ reason, bytes }) => ({ reason, bytes }))).toEqual([{ reason: 'line_too_long', bytes: 5000 }]);

    await crashedAfterTheRecords(dir, snap);
    await appendFile(file, `${'x'.repeat(1000)}\n${jsonLines('a', 10, 10).join('\n')}\nnot json either\n`);
    const third = await startAgent(config);
    await waitForRows(emu, dir, 'ev', jsonLines('a', 0, 20), 'the lines after it');
    await waitFor(() => letters(dir).some((l) => l.line === 'not json either'), 'the next dead letter');
    await third.stop();
    expect(letters(dir).map(({ reason, bytes }) => ({ reason, bytes }))).toEqual([
      { reason: 'line_too_long', bytes: 5000 },
      { reason: 'invalid_json', bytes: 15 },
    ]);
  });

  it('a too-long line lettered before its end stays a dead letter when max_line_bytes is raised before its end (its newline past the first read)', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const file = path.join(dir, 'spool', 'ev', 'a.ndjson');
    await writeLines(file, jsonLines('a', 0, 10));
    // A JSON object once it ends: sent as a row, were it sent.
    await appendFile(file, `{"big":"${'x'.repeat(5000)}`);
    const first = await startAgent(configFor(dir, emu, { spool: { max_line_bytes: 2000 } }));
    await waitForRows(emu, dir, 'ev', jsonLines('a', 0, 10), 'the lines before it');
    await waitFor(() => letters(dir).length === 1, 'its record while the line is unfinished');
    await first.stop();

    // Ended past the next start's first read (1 MiB), under the new limit.
    await appendFile(file, `${'x'.repeat(1_500_000)}"}\n${jsonLines('a', 10, 10).join('\n')}\n`);
    const second = await startAgent(configFor(dir, emu, { spool: { max_line_bytes: 10_000_000 } }));
    await waitForRows(emu, dir, 'ev', jsonLines('a', 0, 20), 'the lines after it');
    await second.stop();
    expect(rows(emu, dir, 'ev')).toEqual(jsonLines('a', 0, 20));
    expect(letters(dir).map(({ reason, offset, bytes }) => ({ reason, offset, bytes }))).toEqual([{ reason: 'line_too_long', offset: letters(dir)[0]!.offset, bytes: 5008 }]);
  });
});
