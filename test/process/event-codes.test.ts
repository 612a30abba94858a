// Every JSON log line of a running agent carries an `event` code (docs/metrics.md
// "Logs": events an operator may want to match carry a stable `event`): the
// config's warnings at start, the embedded emulator, a reload that keeps a
// restart-only key, and the stop.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { spawnAgent, tempDir, waitFor } from './helpers.js';

describe('log event codes (process)', () => {
  it('a start with config warnings on the embedded emulator, a reload of a restart-only key and a stop: no JSON line without an event', async () => {
    const dir = await tempDir();
    const configFile = path.join(dir, 'spoolship.yaml');
    const config = (stateDir: string) => ({
      api: { base_url: 'embedded' },
      spool: { dir: path.join(dir, 'spool'), max_line_bytes: '2MB' },
      // max_line_bytes above max_bytes: a config warning.
      batch: { max_bytes: '1MB' },
      state_dir: stateDir,
      admin: { listen: '127.0.0.1:0' },
      log: { level: 'info', format: 'json' },
    });
    await writeFile(configFile, stringify(config(path.join(dir, 'state'))));
    const agent = spawnAgent(configFile);
    await agent.started;
    await writeFile(configFile, stringify(config(path.join(dir, 'state-2'))));
    agent.child.kill('SIGHUP');
    await waitFor(() => agent.logs.some((l) => l.event === 'reload_key_kept'), 'the kept state_dir logged');
    agent.child.kill('SIGTERM');
    expect((await agent.exited).code).toBe(0);
    const events = agent.logs.map((l) => l.event);
    expect(events).toEqual(expect.arrayContaining(['config_warning', 'embedded_emulator_started', 'started', 'reload_key_kept', 'stopped']));
    expect(agent.logs.filter((l) => typeof l.event !== 'string').map((l) => l.msg)).toEqual([]);
  });
});
