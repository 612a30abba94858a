// A file is known for good once the agent says it discovered it: a kill -9
// right after `file_discovered`, then logrotate's rename out of the patterns
// while the agent is down (the writer goes on in the renamed file), and the
// next start still finds it by its identity and ships every line. The
// discovery waited for the journal's group commit (~50 ms), and a kill in
// that window lost the whole file (found by a chaos soak: 5 of 5 at 0-20 ms).
import { appendFileSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { errorsIn, kill9, lines, spawnAgent, startEmu, tempDir, waitFor, waitForDelivery, writeConfig } from './helpers.js';

const PREFIX = 'd';

describe('a discovered file across a kill -9 (process)', () => {
  it('killed at once after file_discovered, renamed away while down: the next start ships all of it', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const paths = await writeConfig(dir, t, { spool: { idle_ms: 10_000 } });
    const file = path.join(paths.spoolDir, 'ev', 'app.ndjson');
    mkdirSync(path.dirname(file), { recursive: true });
    let agent = spawnAgent(paths.configFile);
    await agent.started;
    writeFileSync(file, lines(PREFIX, 0, 1));
    await waitFor(() => agent.logs.some((l) => l.event === 'file_discovered' && l.file === file), 'app.ndjson discovered', 30_000, 1);
    await kill9(agent);
    appendFileSync(file, lines(PREFIX, 1, 20));
    renameSync(file, `${file}.1`);
    appendFileSync(`${file}.1`, lines(PREFIX, 21, 5));
    agent = spawnAgent(paths.configFile);
    await agent.started;
    // The first line may have been sent before the kill.
    await waitForDelivery(t, 'ev', PREFIX, 26, 'every line of the renamed file', { duplicates: 'allow' });
    expect(errorsIn(agent)).toEqual([]);
  });

  it('killed at once after file_truncated (copytruncate), renamed away while down: the next start ships what was written since', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const paths = await writeConfig(dir, t, { spool: { idle_ms: 10_000 } });
    const file = path.join(paths.spoolDir, 'ev', 'app.ndjson');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, lines(PREFIX, 0, 10));
    let agent = spawnAgent(paths.configFile);
    await agent.started;
    await waitForDelivery(t, 'ev', PREFIX, 10, 'the lines before the truncation');
    // copytruncate: the file emptied, the writer goes on at offset 0 (other first bytes: a new generation of the inode).
    writeFileSync(file, lines(PREFIX, 10, 1));
    await waitFor(() => agent.logs.some((l) => l.event === 'file_truncated' && l.file === file), 'the truncation seen', 30_000, 1);
    await kill9(agent);
    appendFileSync(file, lines(PREFIX, 11, 20));
    renameSync(file, `${file}.1`);
    appendFileSync(`${file}.1`, lines(PREFIX, 31, 5));
    agent = spawnAgent(paths.configFile);
    await agent.started;
    await waitForDelivery(t, 'ev', PREFIX, 36, 'every line written since the truncation', { duplicates: 'allow' });
    expect(errorsIn(agent)).toEqual([]);
  });
});
